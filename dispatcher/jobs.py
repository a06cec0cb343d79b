"""Jobs of ``<ns>.deliveries``: retries, resends, tests, deferrals and hand-offs, each one
delivery handed to the engine (``dispatcher.engine``).

A job for an endpoint deleted meanwhile is dropped and counted; one for an endpoint disabled
meanwhile is counted too and logged as ``skipped_disabled`` (acked once the row is written),
so that re-enabling the endpoint with a replay sends it. A job that came early (through a
shorter delay) goes round again without an attempt. A job that may stand in for a delivery
made meanwhile (a hand-off, a retry late enough for the rescue to have queued it again, a
message the broker redelivered) reads the delivery log first and is skipped when the log
has it; so does every retry, which another retry chain of its event (fanned out twice) may
have made unnecessary. The message is acked once the delivery is settled; raising requeues it
(see ``svc.amqp.consuming``).
"""

from __future__ import annotations

import logging
import time

from dispatcher.delivery import Delivery
from dispatcher.endpoints import EndpointCache
from dispatcher.engine import Deliverer
from svc.amqp.acks import Acks
from svc.amqp.consuming import Handed
from svc.amqp.delivery_jobs import DeliveryJob
from svc.amqp.received import Received
from svc.context import Context

log = logging.getLogger(__name__)

EARLY_MS = 50  # a job this close to its time is sent, not sent round again
FIRST_TRIGGERS = ("initial", "retry")
"""Triggers of the ladder's own attempts: once one succeeded, the event is delivered there.
A resend or a test is asked for again on purpose, so an earlier success does not cover it."""


class Jobs:
    """Handler of the deliveries queue; ``acks`` settles its messages once their deliveries
    are."""

    def __init__(self, ctx: Context, cache: EndpointCache, engine: Deliverer) -> None:
        self.acks = Acks.for_prefetch(ctx.settings.dispatcher_concurrency)
        self._ctx = ctx
        self._cache = cache
        self._engine = engine
        self._log = ctx.deliveries
        self._late_ms = ctx.settings.retry_rescue_after * 500

    async def handle(self, message: Received) -> Handed | None:
        """Hand one job to the engine (returns ``Handed.ON``: the message is acked once the
        delivery is settled), or drop, skip or postpone it; raising requeues it."""
        try:
            job = DeliveryJob.from_message(message.headers, message.body)
        except (KeyError, ValueError, TypeError):
            log.error("dropping malformed delivery job %r", message.message_id)
            self._ctx.metrics.dropped.labels("malformed").inc()
            return None
        target = await self._cache.get(job.org, job.env, job.endpoint_id)
        if target is None:
            self._ctx.metrics.dropped.labels("endpoint_deleted").inc()
            return None
        delivery = Delivery.of_job(job)
        if target.disabled:  # logged as skipped, for a replay once it is turned on
            self._ctx.metrics.dropped.labels("endpoint_disabled").inc()
            delivery.on_settled = _Settle(message, self.acks)
            self._engine.skip_disabled(delivery)
            return Handed.ON
        if await self._made(delivery, message.redelivered):
            return None
        if delivery.not_before_ms > time.time() * 1000 + EARLY_MS:
            await self._engine.wait(delivery, delivery.not_before_ms)  # came early
            return None
        delivery.on_settled = _Settle(message, self.acks)
        await self._engine.submit(delivery, target)
        return Handed.ON

    async def _made(self, delivery: Delivery, redelivered: bool) -> bool:
        """Whether another copy of this delivery made it, so this one is skipped.

        A stand-in (a hand-off, or a retry so late the rescue may have queued it again)
        counts any attempt made for it. For a retry: any attempt at the endpoint since the
        retry was due. An event fanned out twice (an outbox re-publish, a redelivered fan-out)
        has two retry chains at the endpoint whose attempt numbers overlap, so the attempt
        number alone would let one chain's earlier attempt stand for the other's lost one;
        the rescue queues a stand-in only for the latest attempt of the pair, and what counts
        is whether anything was tried after it was due. A retry, and a redelivered job,
        count a logged success of its event at the endpoint: once one chain of an event
        fanned out twice has delivered it, the other's retries are not sent.
        """
        log = self._log
        if delivery.handed_off or self._late(delivery):
            if delivery.due_ms:
                made = await log.attempted_since(
                    delivery.event_id, delivery.endpoint_id, delivery.due_ms - EARLY_MS
                )
            else:
                made = await log.attempted(
                    delivery.event_id, delivery.endpoint_id, delivery.attempt, delivery.trigger
                )
            if made:
                self._engine.skipped("stand_in")
                return True
        # A retry reads the log whenever it comes: another chain of its event (fanned out
        # twice) may have delivered it meanwhile, and retries are few.
        if delivery.trigger == "retry" or (redelivered and delivery.trigger in FIRST_TRIGGERS):
            if await self._engine.succeeded(delivery.event_id, (delivery.endpoint_id,)):
                self._engine.skipped("redelivered" if redelivered else "already_delivered")
                return True
        return False

    def _late(self, delivery: Delivery) -> bool:
        """A retry this late may have been queued again by the scheduler's rescue (see
        ``scheduler.rescue``), which waits twice as long before it does."""
        return bool(delivery.due_ms) and time.time() * 1000 - delivery.due_ms > self._late_ms


class _Settle:
    """Settles a job's message once its delivery is settled."""

    __slots__ = ("acks", "message")

    def __init__(self, message: Received, acks: Acks) -> None:
        self.message = message
        self.acks = acks

    def __call__(self, _delivery: Delivery, error: BaseException | None) -> None:
        if error is None:
            self.acks.finished(self.message)
        else:
            log.warning("job %r failed and goes back: %s", self.message.message_id, error)
            self.acks.fail(self.message)
