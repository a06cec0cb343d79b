"""The retry ladder: a failed job goes to the delay queue of its next step, or is exhausted."""

from __future__ import annotations

import logging

from aio_pika.abc import AbstractIncomingMessage

from svc.context import Context
from svc.durations import format_duration
from svc.jobs import DeliveryJob

log = logging.getLogger(__name__)


class Retries:
    """Handler of the retries queue, fed by dispatchers after each failed attempt."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._ladder = ctx.settings.retry_ladder

    async def handle(self, message: AbstractIncomingMessage) -> None:
        try:
            job = DeliveryJob.from_message(dict(message.headers), message.body)
        except (KeyError, ValueError, TypeError):
            log.error("dropping malformed failed job %s", message.message_id)
            self._ctx.metrics.dropped.labels("malformed").inc()
            return
        retry = self._ladder.next_retry(job.step, job.first_attempt_ms, job.failed_ms)
        metrics = self._ctx.metrics
        if retry is None:
            # The attempt was logged without a next attempt: the log reads "exhausted".
            metrics.exhausted.inc()
            log.info(
                "event %s to %s exhausted after %d attempts",
                job.event_id,
                job.endpoint_id,
                job.attempt,
            )
            return
        await self._ctx.channel.default_exchange.publish(
            job.retried(retry.step).to_message(),
            routing_key=self._ctx.topology.delay(retry.delay_ms),
        )
        metrics.retries.labels(format_duration(retry.delay_ms)).inc()
