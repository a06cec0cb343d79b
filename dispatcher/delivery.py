"""One delivery as it goes through a dispatcher: an event's body to one endpoint, at one
attempt, and how far it has got.

A ``Delivery`` lives only in this process. It becomes a ``DeliveryJob`` (the AMQP message of
``svc.amqp.delivery_jobs``) only when it leaves the process: a retry on the ladder, a wait in
a delay queue, a deferral, a hand-off. An event's fan-out makes one per subscriber with
plain attribute stores, so the first attempt of a delivery builds no message at all.
"""

from __future__ import annotations

from collections.abc import Callable

from svc.amqp.delivery_jobs import DeliveryJob
from svc.envelope import Event


class Delivery:
    """One event to one endpoint at one attempt, with the source's hooks."""

    __slots__ = (
        "answered",
        "attempt",
        "body",
        "created_ms",
        "deferrals",
        "due_ms",
        "endpoint_id",
        "env",
        "event_id",
        "event_type",
        "first_attempt_ms",
        "handed_off",
        "handoff",
        "not_before_ms",
        "on_settled",
        "org",
        "settled",
        "signed_at",
        "started",
        "step",
        "traceparent",
        "trigger",
    )

    def __init__(
        self,
        event_id: str,
        event_type: str,
        org: str,
        env: str,
        created_ms: int,
        endpoint_id: str,
        body: bytes,
        traceparent: str = "",
        on_settled: Callable[[Delivery, BaseException | None], None] | None = None,
    ) -> None:
        self.event_id = event_id
        self.event_type = event_type
        self.org = org
        self.env = env
        self.created_ms = created_ms
        self.endpoint_id = endpoint_id
        self.body = body
        self.traceparent = traceparent
        self.trigger = "initial"
        self.attempt = 1
        self.step = 0
        self.first_attempt_ms = 0
        self.deferrals = 0
        self.handed_off = False
        self.not_before_ms = 0
        self.due_ms = 0
        self.on_settled = on_settled
        """Called once, when the delivery is settled (recorded, its retry or wait confirmed by
        the broker, or handed off), with the exception that stopped it, if any."""
        self.handoff = False
        """The source lets it be handed off when its answer is slow (the fan-out)."""
        self.settled = False
        self.started = 0.0
        """When its attempt was sent (monotonic seconds; 0 until then)."""
        self.signed_at = 0.0
        """The Unix time its next attempt is signed with when a rate limit counted it (in the
        second it was counted in); 0.0 for the time of sending."""
        self.answered = False
        """Its attempt has an outcome: only the recording is left."""

    @classmethod
    def of_event(
        cls,
        event: Event,
        org: str,
        endpoint_id: str,
        traceparent: str,
        on_settled: Callable[[Delivery, BaseException | None], None],
    ) -> Delivery:
        """The first attempt of ``event`` at one of its subscribers."""
        return cls(
            event.id,
            event.type,
            org,
            event.environment,
            event.created_ms,
            endpoint_id,
            event.body,
            traceparent,
            on_settled,
        )

    @classmethod
    def of_job(cls, job: DeliveryJob) -> Delivery:
        """A job taken from a queue, as a delivery of this process."""
        delivery = cls(
            job.event_id,
            job.event_type,
            job.org,
            job.env,
            job.created_ms,
            job.endpoint_id,
            job.body,
            job.traceparent,
        )
        delivery.trigger = job.trigger
        delivery.attempt = job.attempt
        delivery.step = job.step
        delivery.first_attempt_ms = job.first_attempt_ms
        delivery.deferrals = job.deferrals
        delivery.handed_off = job.handed_off
        delivery.not_before_ms = job.not_before_ms
        delivery.due_ms = job.due_ms
        return delivery

    def job(self) -> DeliveryJob:
        """This delivery as the message it leaves the process in."""
        return DeliveryJob(
            event_id=self.event_id,
            event_type=self.event_type,
            org=self.org,
            env=self.env,
            created_ms=self.created_ms,
            endpoint_id=self.endpoint_id,
            body=self.body,
            trigger=self.trigger,
            attempt=self.attempt,
            step=self.step,
            first_attempt_ms=self.first_attempt_ms,
            deferrals=self.deferrals,
            handed_off=self.handed_off,
            not_before_ms=self.not_before_ms,
            traceparent=self.traceparent,
            due_ms=self.due_ms,
        )

    def retried(self, first_attempt_ms: int, step: int, due_ms: int = 0) -> Delivery:
        """Make this the next attempt, at ladder ``step``, due at ``due_ms``, after this one
        failed (and return it)."""
        self.trigger = "retry"
        self.attempt += 1
        self.step = step
        self.first_attempt_ms = first_attempt_ms
        self.deferrals = 0
        self.handed_off = False
        self.not_before_ms = 0
        self.due_ms = due_ms
        return self

    def settle(self, error: BaseException | None = None) -> None:
        """Tell the source this delivery is done with (the first call only)."""
        if self.settled:
            return
        self.settled = True
        if self.on_settled is not None:
            self.on_settled(self, error)
