"""An attempt's outcome, recorded: its row in the delivery log, the ladder's next retry (or
none: exhausted), a receiver's ``Retry-After`` and the delivery metrics. A delivery not made
because its endpoint is disabled is logged too (``skipped_disabled``), in the same batches.

Attempts finished within ``LOG_GATHER`` share one ``COPY`` (``svc.group_commit``); a batch
holding an attempt whose retries ran out commits with its ``delivery.exhausted`` event
(``svc.notices.flow.record_attempts``). A log that
cannot be written (PostgreSQL down or failing over) is tried again in place with back-off, so
the delivery and the message it came from stay unsettled until the attempt is recorded:
giving the message back would send the attempt again on its redelivery, with no record of
the first. A write tried again leaves out the attempts already in the log: the one that
seemed to fail may have committed, its reply lost with the connection.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from dispatcher.classify import status_class
from dispatcher.delivery import Delivery
from dispatcher.pauses import Pauses
from dispatcher.sender import Result
from svc.amqp.delivery_jobs import TRIGGERS
from svc.context import Context
from svc.errors import Unavailable
from svc.events.model import Attempt, skipped
from svc.group_commit import Batcher
from svc.ids import new_record_id
from svc.ladder import Retry
from svc.metrics import OUTCOMES, STATUS_CLASSES
from svc.notices.flow import record_attempts

log = logging.getLogger(__name__)

LOG_GATHER = 0.02
"""Seconds an attempt waits for others to share its ``COPY``; it delays only the delivery's
settling."""
RECORD_RETRY_FIRST = 0.1
RECORD_RETRY_MAX = 5.0
"""Back-off of an attempt's record while the delivery log cannot be written."""


@dataclass(frozen=True, slots=True)
class Recorded:
    """A logged attempt and what follows it: the next retry (None when it succeeded or the
    window closed), when, and when the first attempt was."""

    result: Result
    retry: Retry | None
    next_ms: int | None
    first_ms: int


Done = Callable[[Delivery, BaseException | None], None]
"""Told that a delivery's attempt is recorded (None) or could not be (the error)."""


class Attempts:
    """Records the attempts of one dispatcher process."""

    def __init__(self, ctx: Context, pauses: Pauses) -> None:
        self._ladder = ctx.settings.retry_ladder
        self._log = Batcher(partial(record_attempts, ctx), LOG_GATHER)
        self._relog = Batcher(partial(record_attempts, ctx, again=True), LOG_GATHER)
        """The writes tried again after one seemed to fail."""
        self._pauses = pauses
        self._outcomes = {
            (outcome, klass): ctx.metrics.deliveries.labels(outcome, klass)
            for outcome in OUTCOMES
            for klass in STATUS_CLASSES
        }
        self._lag = {trigger: ctx.metrics.delivery_lag.labels(trigger) for trigger in TRIGGERS}
        self._duration = ctx.metrics.delivery_duration

    async def record(self, delivery: Delivery, result: Result) -> Recorded:
        """Log the attempt (retried in place while the log cannot be written); with the next
        retry and its time when it failed and is not exhausted."""
        attempt, recorded, now_ms = self._outcome(delivery, result)
        delay, log = RECORD_RETRY_FIRST, self._log
        while True:
            try:
                await log.submit(attempt)
                break
            except Unavailable as exc:
                if delay == RECORD_RETRY_FIRST:
                    _not_yet(attempt, exc)
                await asyncio.sleep(delay)
                delay, log = min(delay * 2, RECORD_RETRY_MAX), self._relog
        self._observe(delivery, result, now_ms)
        return recorded

    def record_soon(self, delivery: Delivery, result: Result, done: Done) -> None:
        """Log a successful attempt without waiting for it: ``done(delivery, error)`` is
        called once it is written (retried in place, as ``record`` does, while the log
        cannot be), or with the error that stopped it."""
        attempt, _, now_ms = self._outcome(delivery, result)
        _Writing(self, attempt, delivery, result, now_ms, done).write()

    def skip_soon(self, delivery: Delivery, done: Done) -> None:
        """Log ``delivery`` as not made, its endpoint being disabled (``skipped_disabled``),
        in the same batches as the attempts; ``done`` as for ``record_soon``."""
        now_ms = int(time.time() * 1000)
        attempt = skipped(
            delivery.event_id,
            delivery.event_type,
            delivery.endpoint_id,
            delivery.attempt,
            delivery.trigger,
            now_ms,
        )
        _Writing(self, attempt, delivery, None, now_ms, done).write()

    def _outcome(self, delivery: Delivery, result: Result) -> tuple[Attempt, Recorded, int]:
        """The attempt's row, what follows it, and now."""
        now_ms = int(time.time() * 1000)
        started_ms = now_ms - int(result.duration * 1000)
        first_ms = delivery.first_attempt_ms or started_ms
        next_ms = retry = None
        if not result.ok:
            retry = self._ladder.next_retry(delivery.step, first_ms, now_ms)
            next_ms = None if retry is None else now_ms + retry.delay_ms
            if result.retry_after is not None:
                next_ms = self._respect(delivery.endpoint_id, result.retry_after, next_ms, first_ms)
        attempt = Attempt(
            id=new_record_id("att"),
            event_id=delivery.event_id,
            event_type=delivery.event_type,
            endpoint_id=delivery.endpoint_id,
            attempt=delivery.attempt,
            trigger=delivery.trigger,
            outcome=result.logged_outcome,
            status_code=result.status_code,
            error=result.error,
            duration_ms=round(result.duration * 1000, 3),
            response_body=result.response_body[:256],
            attempted_ms=started_ms,
            next_attempt_ms=next_ms,
        )
        return attempt, Recorded(result, retry, next_ms, first_ms), now_ms

    def _respect(
        self, endpoint_id: str, retry_after: float, next_ms: int | None, first_ms: int
    ) -> int | None:
        """The next attempt after a Retry-After: not before it asks, capped by the retry
        window; the endpoint's other deliveries pause until then (every dispatcher)."""
        if next_ms is None:
            return None  # the window is closed: exhausted whatever the receiver asks
        asked_ms = int((time.time() + retry_after) * 1000)
        self._pauses.pause(endpoint_id, asked_ms)
        return max(next_ms, min(asked_ms, first_ms + self._ladder.window_ms))

    def _observe(self, delivery: Delivery, result: Result, now_ms: int) -> None:
        self._outcomes[result.outcome, status_class(result.status_code)].inc()
        self._duration.observe(result.duration)
        if result.ok:
            self._lag[delivery.trigger].observe((now_ms - delivery.created_ms) / 1000)


class _Writing:
    """An attempt (or a skipped delivery: no result) on its way into the log for a caller
    that does not wait: its batch's outcome arrives as a done-callback, and a log that cannot
    be written is tried again after a back-off, with no task kept per attempt."""

    __slots__ = ("attempt", "attempts", "delay", "delivery", "done", "log", "now_ms", "result")

    def __init__(
        self,
        attempts: Attempts,
        attempt: Attempt,
        delivery: Delivery,
        result: Result | None,
        now_ms: int,
        done: Done,
    ) -> None:
        self.attempts = attempts
        self.attempt = attempt
        self.delivery = delivery
        self.result = result
        self.now_ms = now_ms
        self.done = done
        self.delay = RECORD_RETRY_FIRST
        self.log = attempts._log

    def write(self) -> None:
        self.log.submit_soon(self.attempt).add_done_callback(self._written)

    def _written(self, future: asyncio.Future[None]) -> None:
        error = asyncio.CancelledError() if future.cancelled() else future.exception()
        if isinstance(error, Unavailable):
            if self.delay == RECORD_RETRY_FIRST:
                _not_yet(self.attempt, error)
            asyncio.get_running_loop().call_later(self.delay, self.write)
            self.delay = min(self.delay * 2, RECORD_RETRY_MAX)
            self.log = self.attempts._relog
            return
        if error is None and self.result is not None:
            self.attempts._observe(self.delivery, self.result, self.now_ms)
        self.done(self.delivery, error)


def _not_yet(attempt: Attempt, error: Exception) -> None:
    log.warning(
        "attempt of %r at %s not recorded yet (%s); trying again",
        attempt.event_id,
        attempt.endpoint_id,
        error,
    )
