"""Events as stored, their delivery attempts and the deliveries waiting in ordered lanes.

An event is identified within its scope (organisation, environment, id): a foreign producer
picks its own ids, so two scopes may each hold an event with one id. An attempt belongs to
an endpoint, and the delivery state of an event at an endpoint is its latest attempt's.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass
from typing import Any

from svc.db.times import opt_dt, to_dt
from svc.envelope import Event, iso_ms
from svc.ids import new_record_id
from svc.metrics import OUTCOMES
from svc.orgs.model import Scope

HOUR_MS = 3_600_000
SKIPPED_DISABLED = "skipped_disabled"
"""The outcome logged for an event whose endpoint was disabled: never sent, kept for replay."""
LOGGED_OUTCOMES = (*OUTCOMES, SKIPPED_DISABLED)
"""Every outcome the delivery log holds: those of attempts made, and skipped_disabled."""


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event as stored: its exact body plus the organisation it belongs to."""

    event: Event
    org: str

    @property
    def scope(self) -> Scope:
        return Scope(self.org, self.event.environment)


@dataclass(slots=True)  # not frozen: one is made per delivery, and frozen inits are slow
class Attempt:
    """One delivery attempt as logged."""

    id: str
    event_id: str
    event_type: str
    endpoint_id: str
    attempt: int
    trigger: str
    outcome: str
    status_code: int | None
    error: str | None
    duration_ms: float
    response_body: str
    attempted_ms: int
    next_attempt_ms: int | None

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "delivery_attempt",
            "event_id": self.event_id,
            "event_type": self.event_type,
            "endpoint_id": self.endpoint_id,
            "attempt": self.attempt,
            "trigger": self.trigger,
            "outcome": self.outcome,
            "status_code": self.status_code,
            "error": self.error,
            "duration_ms": self.duration_ms,
            "response_body": self.response_body,
            "attempted_at": iso_ms(self.attempted_ms),
            "next_attempt_at": None
            if self.next_attempt_ms is None
            else iso_ms(self.next_attempt_ms),
        }

    def row(self) -> tuple[Any, ...]:
        return (
            self.id,
            self.event_id,
            self.event_type,
            self.endpoint_id,
            self.attempt,
            self.trigger,
            self.outcome,
            self.status_code,
            _text(self.error),
            self.duration_ms,
            _text(self.response_body),
            to_dt(self.attempted_ms),
            opt_dt(self.next_attempt_ms),
        )


@dataclass(frozen=True, slots=True)
class LogFilter:
    """What a search of the delivery log keeps; None keeps everything."""

    outcome: str | None = None
    status_code: int | None = None
    status_class: int | None = None
    """The first digit of a response code class (5 for 5xx)."""
    event_type: str | None = None
    event_id: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None

    @property
    def empty(self) -> bool:
        return self == LogFilter()

    def key(self) -> str:
        """The filters as text, for binding a cursor to the search it came from."""
        return repr(astuple(self))


def skipped(
    event_id: str, event_type: str, endpoint_id: str, attempt: int, trigger: str, now_ms: int
) -> Attempt:
    """The log's row of a delivery not made because its endpoint is disabled."""
    return Attempt(
        id=new_record_id("att"),
        event_id=event_id,
        event_type=event_type,
        endpoint_id=endpoint_id,
        attempt=attempt,
        trigger=trigger,
        outcome=SKIPPED_DISABLED,
        status_code=None,
        error="endpoint disabled",
        duration_ms=0.0,
        response_body="",
        attempted_ms=now_ms,
        next_attempt_ms=None,
    )


@dataclass(frozen=True, slots=True)
class Overdue:
    """The latest attempt of an event at an endpoint: failed, its next attempt overdue."""

    id: str
    event_id: str
    endpoint_id: str
    attempt: int
    trigger: str
    next_attempt_ms: int
    first_attempt_ms: int | None
    scope: Scope
    """The endpoint's scope, which is the event's."""


@dataclass(frozen=True, slots=True)
class Hour:
    """An endpoint's attempts within one hour (UTC), by outcome."""

    start_ms: int
    succeeded: int
    failed: int


def _text(value: str | None) -> str | None:
    # PostgreSQL text cannot hold NUL; a receiver's answer must never make a batch unwritable.
    return None if value is None else value.replace("\x00", "\ufffd")


@dataclass(frozen=True, slots=True)
class Waiting:
    """A delivery queued in a lane."""

    endpoint_id: str
    event_id: str
    event_created_ms: int
    org: str
    env: str
    event_type: str
    traceparent: str = ""


@dataclass(frozen=True, slots=True)
class Head:
    """The delivery whose turn it is, with its body and schedule."""

    waiting: Waiting
    body: bytes | None  # None: the event is gone (retention); the lane skips it
    attempt: int
    step: int
    first_attempt_ms: int
    next_attempt_ms: int | None
