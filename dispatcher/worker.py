"""The delivery path: endpoint slot or deferral, send, record, and the retry ladder.

For each delivery (a job from ``<ns>.deliveries``, or one of an event's subscribers, see
``dispatcher.fanout``): take an endpoint slot (or defer), sign and POST, record the attempt,
and on failure publish the next attempt to the delay queue of its ladder step with a broker
confirm. Only then does the handler return and the message get acked (``svc.amqp.consuming``);
any exception before that requeues it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace

from dispatcher.classify import status_class
from dispatcher.endpoints import EndpointCache, Target
from dispatcher.gate import EndpointGate
from dispatcher.pauses import Pauses
from dispatcher.ratelimit import RateLimits
from dispatcher.sender import Result, Sender
from svc.amqp.delivery_jobs import TRIGGERS, DeliveryJob
from svc.amqp.received import Received
from svc.context import Context
from svc.durations import format_duration
from svc.events.deliveries import Attempt
from svc.group_commit import Batcher
from svc.ids import new_id
from svc.ladder import Retry
from svc.metrics import OUTCOMES, STATUS_CLASSES

log = logging.getLogger(__name__)

LOG_GATHER = 0.02
EARLY_MS = 50  # a job this close to its time is sent, not sent round again


@dataclass(frozen=True, slots=True)
class Recorded:
    """A logged attempt and what follows it: the next retry (None when it succeeded or the
    window closed), when, and when the first attempt was."""

    result: Result
    retry: Retry | None
    next_ms: int | None
    first_ms: int


class Worker:
    """Handles delivery messages; one per dispatcher process."""

    def __init__(self, ctx: Context, sender: Sender) -> None:
        settings = ctx.settings
        self._ctx = ctx
        self._sender = sender
        self._ladder = settings.retry_ladder
        self.cache = EndpointCache(ctx.endpoints, settings.endpoint_cache_ttl)
        self._gate = EndpointGate(settings.endpoint_concurrency, settings.endpoint_wait)
        # Attempts finished within LOG_GATHER share one COPY; it delays only the ack, and with
        # 2 dispatchers a 20 ms window cut their CPU per delivery by a sixth against 5 ms.
        self._log = Batcher(ctx.deliveries.record, LOG_GATHER)
        self._handoff_queue = ctx.topology.delay(ctx.topology.handoff_ms)
        self._delays = {ms: ctx.topology.delay(ms) for ms in self._ladder.delays_ms}
        self._retried = {
            ms: ctx.metrics.retries.labels(format_duration(ms)) for ms in self._ladder.delays_ms
        }
        self._publisher = ctx.channel.default_exchange
        self.limits = RateLimits(ctx.redis, ctx.keys)
        self.pauses = Pauses(ctx.redis, ctx.keys.endpoint_pauses)
        self._in_flight = 0
        self._late_ms = settings.retry_rescue_after * 500
        # A gauge read at scrape time costs the hot path nothing.
        ctx.metrics.in_flight.set_function(lambda: self._in_flight)
        self._outcomes = {
            (outcome, klass): ctx.metrics.deliveries.labels(outcome, klass)
            for outcome in OUTCOMES
            for klass in STATUS_CLASSES
        }
        self._lag = {trigger: ctx.metrics.delivery_lag.labels(trigger) for trigger in TRIGGERS}
        self._duration = ctx.metrics.delivery_duration

    async def handle(self, message: Received) -> None:
        """Deliver one job; raising requeues it (see ``svc.amqp.consuming``)."""
        try:
            job = DeliveryJob.from_message(message.headers, message.body)
        except (KeyError, ValueError, TypeError):
            log.error("dropping malformed delivery job %s", message.message_id)
            self._ctx.metrics.dropped.labels("malformed").inc()
            return
        target = await self.cache.get(job.org, job.env, job.endpoint_id)
        if target is None or target.disabled:
            reason = "endpoint_deleted" if target is None else "endpoint_disabled"
            self._ctx.metrics.dropped.labels(reason).inc()
            return
        if (job.handed_off or self._late(job)) and await self._made_meanwhile(job):
            return  # the other copy of this attempt (a hand-off's, a rescue's) made it
        if job.not_before_ms > time.time() * 1000 + EARLY_MS:
            await self._wait(job, job.not_before_ms)  # came early through a shorter delay
            return
        await self.deliver(job, target)

    async def _made_meanwhile(self, job: DeliveryJob) -> bool:
        """Whether another copy of this job made its attempt. For a retry: any attempt at the
        endpoint since the retry was due. An event fanned out twice (an outbox re-publish, a
        redelivered fan-out) has two retry chains at the endpoint whose attempt numbers
        overlap, so the attempt number alone would let one chain's earlier attempt stand for
        the other's lost one; the rescue queues a stand-in only for the latest attempt of the
        pair, and what counts is whether anything was tried after it was due."""
        log = self._ctx.deliveries
        if job.due_ms:
            return await log.attempted_since(job.event_id, job.endpoint_id, job.due_ms - EARLY_MS)
        return await log.attempted(job.event_id, job.endpoint_id, job.attempt, job.trigger)

    def _late(self, job: DeliveryJob) -> bool:
        """A retry this late may have been queued again by the scheduler's rescue (see
        ``scheduler.rescue``), which waits twice as long before it does."""
        return bool(job.due_ms) and time.time() * 1000 - job.due_ms > self._late_ms

    async def deliver(self, job: DeliveryJob, target: Target) -> None:
        """Take an endpoint slot (or defer), send, record, and hand a failure to the ladder.

        Returns once the outcome is recorded and a retry confirmed by the broker; raising
        leaves the message it came from to be requeued.
        """
        until_ms = self.pauses.until(target.id)
        if not until_ms and target.rate_limit is not None:
            until_ms = await self.limits.admit(target.id, target.rate_limit)
        if until_ms:
            await self._wait(job.deferred(until_ms), until_ms)
            self._ctx.metrics.deferred.inc()
            return
        if not await self._gate.acquire(target.id):
            job = job.deferred()
            await self._publish(job, self._ctx.topology.defer_queue(job.deferrals))
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

    async def attempt(self, job: DeliveryJob, target: Target) -> Recorded:
        """One attempt, sent and recorded, with the ladder's next retry; no endpoint slot
        and nothing published: an ordered lane's step."""
        self._in_flight += 1
        try:
            result = await self._sender.send(target, job)
        finally:
            self._in_flight -= 1
        return await self._record(job, result)

    async def _finish(self, job: DeliveryJob, result: Result) -> None:
        recorded = await self._record(job, result)
        retry, next_ms = recorded.retry, recorded.next_ms
        if result.ok:
            return
        if retry is None or next_ms is None:
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
        job = job.retried(recorded.first_ms, retry.step, due_ms=next_ms)
        if next_ms > int(time.time() * 1000) + retry.delay_ms:  # Retry-After asked for longer
            await self._wait(replace(job, not_before_ms=next_ms), next_ms)
        else:
            await self._publish(job, self._delays[retry.delay_ms])
        self._retried[retry.delay_ms].inc()

    async def _record(self, job: DeliveryJob, result: Result) -> Recorded:
        """Log the attempt; with the next retry and its time when it failed and is not
        exhausted."""
        now_ms = int(time.time() * 1000)
        started_ms = now_ms - int(result.duration * 1000)
        first_ms = job.first_attempt_ms or started_ms
        next_ms = retry = None
        if not result.ok:
            retry = self._ladder.next_retry(job.step, first_ms, now_ms)
            next_ms = None if retry is None else now_ms + retry.delay_ms
            if result.retry_after is not None:
                next_ms = self._respect(job.endpoint_id, result.retry_after, next_ms, first_ms)
        await self._log.submit(
            Attempt(
                id=new_id("att"),
                event_id=job.event_id,
                event_type=job.event_type,
                endpoint_id=job.endpoint_id,
                attempt=job.attempt,
                trigger=job.trigger,
                outcome=result.logged_outcome,
                status_code=result.status_code,
                error=result.error,
                duration_ms=round(result.duration * 1000, 3),
                response_body=result.response_body[:256],
                attempted_ms=started_ms,
                next_attempt_ms=next_ms,
            )
        )
        self._observe(job, result, now_ms)
        return Recorded(result, retry, next_ms, first_ms)

    def _respect(
        self, endpoint_id: str, retry_after: float, next_ms: int | None, first_ms: int
    ) -> int | None:
        """The next attempt after a Retry-After: not before it asks, capped by the retry
        window; the endpoint's other deliveries pause until then (every dispatcher)."""
        if next_ms is None:
            return None  # the window is closed: exhausted whatever the receiver asks
        asked_ms = int((time.time() + retry_after) * 1000)
        self.pauses.pause(endpoint_id, asked_ms)
        return max(next_ms, min(asked_ms, first_ms + self._ladder.window_ms))

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

    async def _wait(self, job: DeliveryJob, until_ms: int) -> None:
        """Send ``job`` round a delay queue until ``until_ms`` (no attempt is counted)."""
        wait_ms = max(0, until_ms - int(time.time() * 1000))
        await self._publish(job, self._ctx.topology.wait_queue(wait_ms))

    async def _publish(self, job: DeliveryJob, queue: str) -> None:
        """Publish to a queue and wait for the broker's confirm, however long: while RabbitMQ
        blocks publishing (a memory or disk alarm, ``svc.amqp.flow``) the handler waits here
        and its message stays unacked (it holds one prefetch slot) until the job is confirmed.
        A time-out would only put the message back and send the attempt again. A connection
        that dies fails the publish, and the message goes back to its queue."""
        await self._publisher.publish(job.to_message(), routing_key=queue)
