"""The delivery path: endpoint slot or deferral, send, record, and the retry ladder.

For each delivery (a job from ``<ns>.deliveries``, or one of an event's subscribers, see
``dispatcher.fanout``): take an endpoint slot (or defer), sign and POST, record the attempt,
and on failure publish the next attempt to the delay queue of its ladder step with a broker
confirm. Only then does the handler return and the message get acked (``svc.consumer``);
any exception before that requeues it.
"""

from __future__ import annotations

import logging
import time

from aio_pika.abc import AbstractIncomingMessage

from dispatcher.classify import status_class
from dispatcher.endpoints import EndpointCache, Target
from dispatcher.gate import EndpointGate
from dispatcher.sender import Result, Sender
from svc.batch import Batcher
from svc.context import Context
from svc.durations import format_duration
from svc.events.deliveries import Attempt
from svc.ids import new_id
from svc.jobs import TRIGGERS, DeliveryJob
from svc.metrics import OUTCOMES, STATUS_CLASSES

log = logging.getLogger(__name__)

LOG_GATHER = 0.005


class Worker:
    """Handles delivery messages; one per dispatcher process."""

    def __init__(self, ctx: Context, sender: Sender) -> None:
        settings = ctx.settings
        self._ctx = ctx
        self._sender = sender
        self._ladder = settings.retry_ladder
        self.cache = EndpointCache(ctx.endpoints, settings.endpoint_cache_ttl)
        self._gate = EndpointGate(settings.endpoint_concurrency, settings.endpoint_wait)
        # Attempts finished within a few milliseconds share one write (it delays the ack only).
        self._log = Batcher(ctx.deliveries.record, LOG_GATHER)
        self._defer_queue = ctx.topology.delay(round(settings.defer_delay * 1000))
        self._handoff_queue = ctx.topology.delay(ctx.topology.handoff_ms)
        self._delays = {ms: ctx.topology.delay(ms) for ms in self._ladder.delays_ms}
        self._retried = {
            ms: ctx.metrics.retries.labels(format_duration(ms)) for ms in self._ladder.delays_ms
        }
        self._publisher = ctx.channel.default_exchange
        self._in_flight = 0
        # A gauge read at scrape time costs the hot path nothing.
        ctx.metrics.in_flight.set_function(lambda: self._in_flight)
        self._outcomes = {
            (outcome, klass): ctx.metrics.deliveries.labels(outcome, klass)
            for outcome in OUTCOMES
            for klass in STATUS_CLASSES
        }
        self._lag = {trigger: ctx.metrics.delivery_lag.labels(trigger) for trigger in TRIGGERS}
        self._duration = ctx.metrics.delivery_duration

    async def handle(self, message: AbstractIncomingMessage) -> None:
        """Deliver one job; raising requeues it (see ``svc.consumer``)."""
        try:
            job = DeliveryJob.from_message(message.headers, message.body)
        except (KeyError, ValueError, TypeError):
            log.error("dropping malformed delivery job %s", message.message_id)
            self._ctx.metrics.dropped.labels("malformed").inc()
            return
        target = await self.cache.get(job.org, job.env, job.endpoint_id)
        if target is None:
            self._ctx.metrics.dropped.labels("endpoint_deleted").inc()
            return
        if job.handed_off and await self._ctx.deliveries.attempted(
            job.event_id, job.endpoint_id, job.attempt, job.trigger
        ):
            return  # the slow delivery it stood in for finished and was recorded
        await self.deliver(job, target)

    async def deliver(self, job: DeliveryJob, target: Target) -> None:
        """Take an endpoint slot (or defer), send, record, and hand a failure to the ladder.

        Returns once the outcome is recorded and a retry confirmed by the broker; raising
        leaves the message it came from to be requeued.
        """
        if not await self._gate.acquire(target.id):
            await self._publish(job.deferred(), self._defer_queue)
            self._ctx.metrics.deferred.inc()
            return
        self._in_flight += 1
        answered = False
        try:
            result = await self._sender.send(target, job)
            answered = result.status_code is not None
        finally:
            self._in_flight -= 1
            self._gate.release(target.id, answered)
        await self._finish(job, result)

    async def _finish(self, job: DeliveryJob, result: Result) -> None:
        now_ms = int(time.time() * 1000)
        started_ms = now_ms - int(result.duration * 1000)
        first_ms = job.first_attempt_ms or started_ms
        next_ms = retry = None
        if not result.ok:
            retry = self._ladder.next_retry(job.step, first_ms, now_ms)
            next_ms = None if retry is None else now_ms + retry.delay_ms
        await self._log.submit(
            Attempt(
                id=new_id("att"),
                event_id=job.event_id,
                event_type=job.event_type,
                endpoint_id=job.endpoint_id,
                attempt=job.attempt,
                trigger=job.trigger,
                outcome=result.outcome,
                status_code=result.status_code,
                error=result.error,
                duration_ms=round(result.duration * 1000, 3),
                response_body=result.response_body[:256],
                attempted_ms=started_ms,
                next_attempt_ms=next_ms,
            )
        )
        self._observe(job, result, now_ms)
        if result.ok:
            return
        if retry is None:
            # Logged without a next attempt, the delivery reads "exhausted".
            self._ctx.metrics.exhausted.inc()
            log.info(
                "event %s to %s exhausted after %d attempts",
                job.event_id,
                job.endpoint_id,
                job.attempt,
            )
            return
        # The ladder's decision is made here: straight into the delay queue of the next step.
        await self._publish(job.retried(first_ms, retry.step), self._delays[retry.delay_ms])
        self._retried[retry.delay_ms].inc()

    def _observe(self, job: DeliveryJob, result: Result, now_ms: int) -> None:
        self._outcomes[result.outcome, status_class(result.status_code)].inc()
        self._duration.observe(result.duration)
        if result.ok:
            self._lag[job.trigger].observe((now_ms - job.created_ms) / 1000)

    async def hand_off(self, job: DeliveryJob) -> None:
        """Queue ``job`` to stand in for a delivery still in flight (no attempt is counted).

        It waits in a delay queue longer than the delivery can take, so by the time it runs
        the original has been recorded (then the job does nothing) or its process died.
        """
        await self._publish(job.handed(), self._handoff_queue)
        self._ctx.metrics.handed_off.inc()

    async def _publish(self, job: DeliveryJob, queue: str) -> None:
        """Publish to a queue and wait for the broker's confirm."""
        await self._publisher.publish(job.to_message(), routing_key=queue)
