"""Delivery jobs as AMQP messages: the event body bytes plus routing headers.

The body of a job is the stored event body, byte for byte, so a dispatcher signs and sends it
without reading Redis. Attempt bookkeeping lives in the message's own headers because a
re-publish through a delay queue keeps only the last hop in ``x-death``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import aio_pika

from svc.envelope import Event
from svc.tracing import TRACEPARENT

TRIGGERS = ("initial", "retry", "resend", "test")


@dataclass(frozen=True, slots=True)
class DeliveryJob:
    """One event to one endpoint, at one attempt."""

    event_id: str
    event_type: str
    org: str
    env: str
    created_ms: int
    endpoint_id: str
    body: bytes
    trigger: str = "initial"
    attempt: int = 1
    step: int = 0
    first_attempt_ms: int = 0
    deferrals: int = 0
    handed_off: bool = False
    not_before_ms: int = 0
    """Not to be attempted before then (a receiver's Retry-After, a paused or rate-limited
    endpoint); a job that arrives earlier waits again without an attempt."""
    traceparent: str = ""
    """The W3C trace context of the event's publish, when tracing is on."""
    due_ms: int = 0
    """When this retry was meant to run. One that arrives long after (held back by a saturated
    endpoint, a backlog, or found lost and queued again as a stand-in) checks the delivery log
    first: the other copy may have made the attempt meanwhile."""

    @classmethod
    def of(
        cls,
        event: Event,
        org: str,
        endpoint_id: str,
        trigger: str = "initial",
        traceparent: str = "",
    ) -> DeliveryJob:
        """The first attempt of ``event`` at one endpoint."""
        return cls(
            event_id=event.id,
            event_type=event.type,
            org=org,
            env=event.environment,
            created_ms=event.created_ms,
            endpoint_id=endpoint_id,
            body=event.body,
            trigger=trigger,
            traceparent=traceparent,
        )

    def to_message(self) -> aio_pika.Message:
        """A persistent AMQP message carrying this job; bookkeeping headers at their default
        are left out (``from_message`` reads them back as defaults), so a first attempt
        carries six headers to decode, not thirteen."""
        headers: dict[str, Any] = {
            "svc-event-id": self.event_id,
            "svc-event-type": self.event_type,
            "svc-org": self.org,
            "svc-env": self.env,
            "svc-created-ms": self.created_ms,
            "svc-endpoint-id": self.endpoint_id,
        }
        optional = (
            ("svc-trigger", self.trigger, "initial"),
            ("svc-attempt", self.attempt, 1),
            ("svc-step", self.step, 0),
            ("svc-first-attempt-ms", self.first_attempt_ms, 0),
            ("svc-deferrals", self.deferrals, 0),
            ("svc-handed-off", self.handed_off, False),
            ("svc-not-before-ms", self.not_before_ms, 0),
            (TRACEPARENT, self.traceparent, ""),
            ("svc-due-ms", self.due_ms, 0),
        )
        for name, value, default in optional:
            if value != default:
                headers[name] = value
        return aio_pika.Message(
            self.body,
            content_type="application/json",
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
            message_id=self.event_id,
            headers=headers,
        )

    @classmethod
    def from_message(cls, headers: Mapping[str, Any], body: bytes) -> DeliveryJob:
        """Read a job back; raises KeyError or ValueError on a malformed message."""
        return cls(
            event_id=_text(headers["svc-event-id"]),
            event_type=_text(headers["svc-event-type"]),
            org=_text(headers["svc-org"]),
            env=_text(headers["svc-env"]),
            created_ms=int(headers["svc-created-ms"]),
            endpoint_id=_text(headers["svc-endpoint-id"]),
            body=body,
            trigger=_text(headers.get("svc-trigger", "initial")),
            attempt=int(headers.get("svc-attempt", 1)),
            step=int(headers.get("svc-step", 0)),
            first_attempt_ms=int(headers.get("svc-first-attempt-ms", 0)),
            deferrals=int(headers.get("svc-deferrals", 0)),
            handed_off=bool(headers.get("svc-handed-off", False)),
            not_before_ms=int(headers.get("svc-not-before-ms", 0)),
            traceparent=_text(headers.get(TRACEPARENT, "")),
            due_ms=int(headers.get("svc-due-ms", 0)),
        )

    def retried(
        self, first_attempt_ms: int, step: int, not_before_ms: int = 0, due_ms: int = 0
    ) -> DeliveryJob:
        """The job of the next attempt, at ladder ``step``, due at ``due_ms``, after this one
        failed."""
        return replace(
            self,
            trigger="retry",
            attempt=self.attempt + 1,
            step=step,
            first_attempt_ms=first_attempt_ms,
            deferrals=0,
            handed_off=False,
            not_before_ms=not_before_ms,
            due_ms=due_ms,
        )

    def handed(self) -> DeliveryJob:
        """The same attempt, standing in for a delivery that is still in flight."""
        return replace(self, handed_off=True)

    def deferred(self, not_before_ms: int = 0) -> DeliveryJob:
        """The same attempt, postponed because its endpoint is saturated, paused or at its
        rate limit (until ``not_before_ms`` when given). A hand-off stays one: the delivery
        it stands in for may have been recorded by the time the deferral comes back."""
        return replace(self, deferrals=self.deferrals + 1, not_before_ms=not_before_ms)


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode()
    if not isinstance(value, str):
        raise ValueError(f"expected text, got {type(value).__name__}")
    return value
