"""Queueing again the retries the broker lost: failed attempts whose next attempt is long
overdue.

A retry waits in a RabbitMQ delay queue and comes back by dead-lettering. A classic queue
dead-letters at most once: a job whose delay runs out while the broker shuts down can vanish
(quorum queues with at-least-once dead-lettering cannot lose it). The delivery log knows
better: every failed attempt that is not exhausted names the time of the next one. When the
latest attempt of an event at an endpoint is such a failure and its next attempt is overdue
by more than ``SVC_RETRY_RESCUE_AFTER``, the scheduler queues that attempt again as a
stand-in job (``DeliveryLog.overdue``). Ordered endpoints are left out (their lanes keep their
own schedule in PostgreSQL), and so are disabled ones (a recover sends their events once they
are on again). Each attempt comes with its endpoint's scope, the scope of the event it
resends (events are identified within their scope).

Each scheduler reads the delivery log forward from a watermark, in batches, under a
transaction-level advisory lock so that one scheduler at a time rescues. A rescued retry is a
stand-in job: handed off, late by its due time, and held for one more rescue age in a delay
queue, so that an original that was only held back runs first. The dispatcher first looks in
the log and does nothing when that attempt was made after all. The original, should it turn
up later still, is late too and does the same, so a retry that was only held back (a
saturated endpoint deferring it, a backlog) is not sent twice unless both copies run at once.

A stand-in can be lost as its original was (a RabbitMQ node stopping while it waits). The
scheduler that queued it looks again two rescue ages later (one for its wait, one to be sent
and logged): while the attempt it stands for is still the latest of its event at its endpoint,
it queues another one.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace

from scheduler.commands import publish_jobs
from svc.amqp.delivery_jobs import DeliveryJob
from svc.context import Context
from svc.events.model import Overdue

log = logging.getLogger(__name__)

LOCK_ID = 0x5C_0E_5C_0E
RESCUE_BATCH = 500
LOOK_BACK = 3600.0
"""How far before the rescue age a scheduler that just started looks (seconds)."""
LONGEST_INTERVAL = 60.0


def rescue_interval(rescue_after: float) -> float:
    """How often to look: every minute, or a fifth of the rescue age when that is shorter."""
    return min(LONGEST_INTERVAL, rescue_after / 5)


class Rescuer:
    """The watermark of one scheduler and the sweep that moves it."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._after = (self._until_ms() - round(LOOK_BACK * 1000), "")
        self._held_until = 0.0
        self._queued: dict[str, tuple[Overdue, float]] = {}
        """Attempts this scheduler queued a stand-in for, and when (until an attempt follows)."""

    def _until_ms(self) -> int:
        return int((time.time() - self._ctx.settings.retry_rescue_after) * 1000)

    async def sweep(self) -> int:
        """Queue again every retry overdue by the rescue age; returns how many.

        After PostgreSQL or RabbitMQ was away (a sweep failed, or found the channel closed or
        publishing blocked by a broker alarm), retries that fell due meanwhile are late, not
        lost: the dispatchers could neither receive nor log them, or hold them until the
        broker takes their publishes. The rescue then waits one rescue age before it looks again, so
        that they run first rather than side by side with stand-ins.
        """
        if not self._ctx.broker.is_open() or self._ctx.blocked():
            self._hold()
        if time.time() < self._held_until:
            return 0
        try:
            return await self._sweep()
        except Exception:
            self._hold()
            raise

    def _hold(self) -> None:
        self._held_until = time.time() + self._ctx.settings.retry_rescue_after

    async def _sweep(self) -> int:
        until_ms, count = self._until_ms(), 0
        while True:
            async with self._ctx.db.transaction() as unit:
                if not await unit.fetchval("SELECT pg_try_advisory_xact_lock($1)", LOCK_ID):
                    return count  # another scheduler is at it; this one looks next time
                found = await self._ctx.deliveries.overdue(
                    unit, self._after, until_ms, RESCUE_BATCH
                )
                count += await self._queue(found)
            if found:
                self._after = (found[-1].next_attempt_ms, found[-1].id)
            if len(found) < RESCUE_BATCH:
                self._after = max(self._after, (until_ms, ""))
                break
        count += await self._again()
        if count:
            self._ctx.metrics.rescued.inc(count)
            log.warning(
                "queued again %d retries overdue by more than %.0f s (lost in the broker)",
                count,
                self._ctx.settings.retry_rescue_after,
            )
        return count

    async def _again(self) -> int:
        """Queue another stand-in for every attempt whose stand-in, queued two rescue ages ago
        or longer, made no attempt: it was lost too. Forget the ones that were followed."""
        if not self._queued:
            return 0
        due = time.time() - 2 * self._ctx.settings.retry_rescue_after
        waited = [lost for lost, queued in self._queued.values() if queued <= due]
        if not waited:
            return 0
        async with self._ctx.db.transaction() as unit:
            if not await unit.fetchval("SELECT pg_try_advisory_xact_lock($1)", LOCK_ID):
                return 0
            count = await self._queue(await self._ctx.deliveries.still_overdue(unit, waited))
        for lost in waited:  # followed by an attempt, or past retention: done with
            if self._queued[lost.id][1] <= due:
                del self._queued[lost.id]
        return count

    async def _queue(self, found: list[Overdue]) -> int:
        """Publish a stand-in for each of ``found`` (none for an event past retention) and
        remember when; returns how many."""
        pairs = [(lost, await self.stand_in(lost)) for lost in found]
        queued = [(lost, job) for lost, job in pairs if job is not None]
        await self._publish([job for _, job in queued])
        now = time.time()
        for lost, _ in queued:
            self._queued[lost.id] = (lost, now)
        return len(queued)

    async def stand_in(self, lost: Overdue) -> DeliveryJob | None:
        """The job of the attempt after ``lost``, handed off (dropped if it was made after
        all); None when the event is past retention."""
        stored = await self._ctx.events.load(lost.scope, lost.event_id)
        if stored is None:
            return None  # past retention: nothing left to send
        ladder = self._ctx.settings.retry_ladder
        made = DeliveryJob.of(stored.event, stored.org, lost.endpoint_id)
        made = replace(made, attempt=lost.attempt)
        first_ms = lost.first_attempt_ms or lost.next_attempt_ms
        step = ladder.step_after(lost.attempt)
        # It waits one more rescue age first: an original that was only held back gets that
        # long to run and be logged, and the stand-in then drops itself.
        not_before = int((time.time() + self._ctx.settings.retry_rescue_after) * 1000)
        made = made.retried(first_ms, step, not_before, due_ms=lost.next_attempt_ms)
        return made.handed()

    async def _publish(self, jobs: list[DeliveryJob]) -> None:
        wait_ms = round(self._ctx.settings.retry_rescue_after * 1000)
        await publish_jobs(self._ctx, jobs, self._ctx.topology.wait_queue(wait_ms))
