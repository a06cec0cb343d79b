"""Deliveries leaving the dispatcher process as jobs: a failed attempt's retry onto the ladder
(or its exhaustion), a wait round a delay queue (a rate limit, a pause, ``Retry-After``), a
deferral, a hand-off's stand-in. Each is published with a broker confirm before the delivery
settles, so its message is acked only once the job is safe."""

from __future__ import annotations

import logging
import time

from dispatcher.attempts import Recorded
from dispatcher.delivery import Delivery
from svc.context import Context
from svc.durations import format_duration

log = logging.getLogger(__name__)


class Exits:
    """Publishes the engine's deliveries that leave the process."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._broker = ctx.broker
        ladder = ctx.settings.retry_ladder
        self._delays = {ms: ctx.topology.delay(ms) for ms in ladder.delays_ms}
        self._retried = {
            ms: ctx.metrics.retries.labels(format_duration(ms)) for ms in ladder.delays_ms
        }

    async def follow(self, delivery: Delivery, recorded: Recorded) -> None:
        """A failed attempt: exhausted, or its retry published to the ladder's next step."""
        retry, next_ms = recorded.retry, recorded.next_ms
        if retry is None or next_ms is None:
            # Logged without a next attempt, the delivery reads "exhausted".
            self._ctx.metrics.exhausted.inc()
            log.info(
                "event %r to %s exhausted after %d attempts",
                delivery.event_id,
                delivery.endpoint_id,
                delivery.attempt,
            )
            return
        # The ladder's decision is made here: straight into the delay queue of the next step.
        delivery.retried(recorded.first_ms, retry.step, due_ms=next_ms)
        if next_ms > int(time.time() * 1000) + retry.delay_ms:  # Retry-After asked for longer
            delivery.not_before_ms = next_ms
            await self.wait(delivery, next_ms)
        else:
            await self.leave(delivery, self._delays[retry.delay_ms])
        self._retried[retry.delay_ms].inc()

    async def wait(self, delivery: Delivery, until_ms: int) -> None:
        """Send ``delivery`` round a delay queue until ``until_ms`` (no attempt is counted)."""
        delivery.not_before_ms = until_ms
        wait_ms = max(0, until_ms - int(time.time() * 1000))
        await self.leave(delivery, self._ctx.topology.wait_queue(wait_ms))

    async def leave(self, delivery: Delivery, queue: str) -> None:
        """Publish ``delivery`` as a job and wait for the broker's confirm, however long:
        while RabbitMQ blocks publishing (a memory or disk alarm, ``svc.amqp.flow``) the
        delivery stays unsettled, and its message unacked, until the job is confirmed. A
        time-out would only put the message back and send the attempt again. A connection
        that dies fails the publish, and the message goes back to its queue."""
        await self._broker.job(delivery.job(), queue)
