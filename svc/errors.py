"""Errors the kernel raises on purpose; the API maps each to one Problem code.

Tree::

    ServiceError                  anything the kernel reports to its callers
    ├── Unavailable               PostgreSQL, Redis or RabbitMQ cannot be reached now; retry
    ├── InvalidCursor             a pagination cursor that this service did not hand out
    ├── Rejected                  a message of the events exchange breaks the AMQP contract
    │                             (``svc.amqp``): it goes to ``<ns>.rejected`` with ``reason``
    │                             (a stable code, the metric label) and ``detail``
    ├── TerminalUnavailable       a terminal payment cannot start (reason: not_found,
    │                             offline or busy)
    └── IdempotencyError          an Idempotency-Key cannot be honoured
        ├── KeyReused             the key was first used for a request with other parameters
        └── RequestInProgress     the key's record changed while it was read

``SecretKeyError`` (a ``SettingsError``) reports an unusable ``SVC_SECRET_KEY`` at start-up.
"""

from __future__ import annotations


class ServiceError(Exception):
    """Base of the kernel's errors."""


class Unavailable(ServiceError):
    """A backing service is unreachable; ``service`` names it (``postgresql``, ``redis``…)."""

    def __init__(self, service: str, detail: str = "") -> None:
        super().__init__(f"{service} is unavailable" + (f": {detail}" if detail else ""))
        self.service = service


class InvalidCursor(ServiceError):
    """The cursor was not made by this service for this list."""


class Rejected(ServiceError):
    """The service cannot accept this event message; ``reason`` says why, in one code."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class TerminalUnavailable(ServiceError):
    """A terminal payment cannot start; ``reason`` is ``not_found``, ``offline`` or ``busy``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class IdempotencyError(ServiceError):
    """An ``Idempotency-Key`` cannot be honoured for this request."""


class KeyReused(IdempotencyError):
    """The key was first used with other parameters."""


class RequestInProgress(IdempotencyError):
    """The key's record met the request's claim, then was gone when read (it expired)."""
