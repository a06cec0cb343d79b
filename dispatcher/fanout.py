"""Fan-out in the dispatcher: each event is delivered to its subscribers in this process.

Subscribers come from the in-process endpoint cache. Each subscriber's delivery goes to the
delivery engine (``dispatcher.engine``), one after another as it has room, or into its
ordered lane (``dispatcher.ordered``). The event is acked once every delivery it carries is
settled: recorded (a failed one handed to the ladder with a broker confirm), queued in its
lane, or handed off by the engine when its receiver is slow, so one slow endpoint never
holds an event that other endpoints are waiting for. A message the service cannot accept
goes to the rejected queue (``dispatcher.intake``).

A subscriber that is disabled gets no delivery: the event is logged against it as
``skipped_disabled`` (in the attempts' batches), so that re-enabling it can replay it; the
message is acked once those rows are written too.

An event that comes back (the broker redelivered its message, the outbox sweep published it
again, or a producer sent it twice) may have been delivered already: its subscribers with a
success in the delivery log are left out. An operational event is never delivered to the
endpoint it is about.

A subscriber with a payload filter (``svc.webhooks.filters``) gets the event only when the
envelope meets it; otherwise the event is neither delivered nor logged there, only counted
(``svc_deliveries_filtered_total``). The body is parsed once per event, and only when a
subscriber filters; each distinct condition is evaluated once, however many endpoints share it.
"""

from __future__ import annotations

import logging
import time

import orjson

from dispatcher.delivery import Delivery
from dispatcher.endpoints import EndpointCache, Target
from dispatcher.engine import Deliverer
from dispatcher.intake import Intake
from dispatcher.ordered import Lanes
from svc.amqp.acks import Acks
from svc.amqp.consuming import Handed
from svc.amqp.messages import AGAIN
from svc.amqp.received import Received
from svc.context import Context
from svc.envelope import about
from svc.errors import Rejected
from svc.events.model import StoredEvent, Waiting
from svc.tracing import TRACEPARENT

log = logging.getLogger(__name__)


class _Event:
    """An event message and how many of its deliveries are not settled yet."""

    __slots__ = ("acks", "failed", "message", "unsettled")

    def __init__(self, message: Received, acks: Acks, unsettled: int) -> None:
        self.message = message
        self.acks = acks
        self.unsettled = unsettled
        self.failed = False

    def settled(self, _delivery: Delivery | None, error: BaseException | None) -> None:
        if self.failed:
            return
        if error is not None:
            self.failed = True
            log.warning(
                "a delivery of event %r failed; the event goes back: %s",
                self.message.message_id,
                error,
            )
            self.acks.fail(self.message)
            return
        self.unsettled -= 1
        if self.unsettled == 0:
            self.acks.finished(self.message)


class FanOut:
    """Handler of the fan-out queue; ``acks`` settles its messages once their deliveries are."""

    def __init__(self, ctx: Context, cache: EndpointCache, engine: Deliverer, lanes: Lanes) -> None:
        self.acks = Acks.for_prefetch(ctx.settings.dispatcher_concurrency)
        self._ctx = ctx
        self._cache = cache
        self._engine = engine
        self._lanes = lanes
        self._intake = Intake(ctx)
        self._initial = ctx.metrics.jobs.labels("initial")
        self._filtered_out = ctx.metrics.filtered
        self._traced = ctx.tracing.enabled
        self._waited = ctx.metrics.event_wait

    async def handle(self, message: Received) -> Handed | None:
        """Hand the event's deliveries to the engine and its lanes (returns ``Handed.ON``:
        the message is acked once they are settled), or reject it."""
        taken = time.time()
        try:
            stored = await self._intake.accept(message)
        except Rejected as rejected:
            await self._intake.reject(message, rejected)
            return None
        event = stored.event
        self._waited.observe(max(0.0, taken - event.created_ms / 1000))
        again = _again(message)
        if not message.headers.get("svc-stored"):  # its deliveries carry the stored time
            now_ms = int(time.time() * 1000)
            stored = await self._ctx.events.store_if_absent(stored, now_ms)
            if stored.event.created_ms != now_ms and not again:
                again = "republished"  # a producer sent an event the store has already
            event = stored.event
        targets, off = await self._audience(stored)
        if targets and again:
            targets = await self._not_made(event.id, targets, again)
        if not targets and not off:
            return None
        self._initial.inc(len(targets))
        trace = _traceparent(message) if self._traced else ""
        ordered = [target for target in targets if target.ordered]
        if ordered:
            await self._lanes.enqueue([_waiting(stored, target, trace) for target in ordered])
            if len(ordered) == len(targets) and not off:
                return None
        settled = _Event(message, self.acks, len(targets) - len(ordered) + len(off)).settled
        engine = self._engine
        for target in off:
            engine.skip_disabled(Delivery.of_event(event, stored.org, target.id, trace, settled))
        for target in targets:
            if not target.ordered:
                delivery = Delivery.of_event(event, stored.org, target.id, trace, settled)
                delivery.handoff = True
                await engine.submit(delivery, target)
        return Handed.ON

    async def _audience(self, stored: StoredEvent) -> tuple[list[Target], list[Target]]:
        """The enabled and the disabled subscribers the event is for: never the endpoint an
        operational event is about, never one whose filter it fails."""
        event = stored.event
        targets, off = await self._cache.subscribed(stored.org, event.environment, event.type)
        subject = about(event)  # an endpoint never hears of itself
        if subject is not None:
            targets = [target for target in targets if target.id != subject]
            off = [target for target in off if target.id != subject]
        if any(target.filter is not None for target in (*targets, *off)):
            return self._filtered(event.body, targets, off)
        return targets, off

    def _filtered(
        self, body: bytes, targets: list[Target], off: list[Target]
    ) -> tuple[list[Target], list[Target]]:
        """``targets`` and ``off`` without the endpoints whose filter the event fails."""
        try:
            envelope = orjson.loads(body)
        except orjson.JSONDecodeError:  # the intake checked it; never drop on our own error
            return targets, off
        verdicts: dict[bytes, bool] = {}

        def keeps(target: Target) -> bool:
            condition = target.filter
            if condition is None:
                return True
            verdict = verdicts.get(condition.key)
            if verdict is None:
                verdict = verdicts[condition.key] = condition.matches(envelope)
            return verdict

        kept, kept_off = [t for t in targets if keeps(t)], [t for t in off if keeps(t)]
        left_out = len(targets) + len(off) - len(kept) - len(kept_off)
        if left_out:
            self._filtered_out.inc(left_out)
        return kept, kept_off

    async def _not_made(self, event_id: str, targets: list[Target], again: str) -> list[Target]:
        """``targets`` without those the delivery log has the event delivered to."""
        made = await self._engine.succeeded(event_id, [target.id for target in targets])
        if made:
            self._engine.skipped(again, len(made))
        return [target for target in targets if target.id not in made]


def _again(message: Received) -> str:
    """Why ``message`` may carry deliveries made already ("" when it is new)."""
    if message.redelivered:
        return "redelivered"
    if message.headers.get(AGAIN):
        return "republished"
    return ""


def _waiting(stored: StoredEvent, target: Target, trace: str) -> Waiting:
    event = stored.event
    return Waiting(
        target.id, event.id, event.created_ms, stored.org, event.environment, event.type, trace
    )


def _traceparent(message: Received) -> str:
    value = message.headers.get(TRACEPARENT)
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    return value if isinstance(value, str) else ""
