"""Periodic work: the outbox sweep, database upkeep and queue-depth gauges."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from svc.context import Context
from svc.db.partitions import drop_expired, ensure_partitions
from svc.events.flow import sweep_commands
from svc.events.store.ordered import OrderedLanes

log = logging.getLogger(__name__)

SWEEP_BATCH = 500
SWEEP_LANES = 3


async def sweep_outbox(ctx: Context) -> int:
    """Re-publish events whose publish was never confirmed; returns how many.

    Each batch is locked with ``SKIP LOCKED`` until its publishes are confirmed and its rows
    deleted, so schedulers sweeping at once never publish one row at the same time. A few
    lanes sweep side by side, so one batch's round trips overlap another's publishing. While
    RabbitMQ blocks publishing (``svc.amqp.flow``) the sweep waits for the next round.
    """
    if ctx.blocked():
        log.warning("outbox sweep put off: RabbitMQ blocks publishing")
        return 0
    cutoff = int((time.time() - ctx.settings.outbox_sweep_age) * 1000)
    counts = await asyncio.gather(*(_sweep_lane(ctx, cutoff) for _ in range(SWEEP_LANES)))
    count = sum(counts)
    if count:
        log.warning("outbox sweep re-published %d events", count)
    requests = 0
    while batch := await sweep_commands(ctx, cutoff, SWEEP_BATCH):
        requests += batch
        if batch < SWEEP_BATCH:
            break
    if requests:
        log.warning("outbox sweep re-published %d resend and test requests", requests)
    return count


async def _sweep_lane(ctx: Context, cutoff: int) -> int:
    count = 0
    while True:
        async with ctx.db.transaction() as unit:
            stragglers = await ctx.events.lock_stragglers(unit, cutoff, SWEEP_BATCH)
            await ctx.publisher.send_all(stragglers)
            await ctx.events.published([s.event.id for s in stragglers], unit)
        count += len(stragglers)
        ctx.metrics.outbox_republished.inc(len(stragglers))
        if len(stragglers) < SWEEP_BATCH:
            return count


async def upkeep(ctx: Context) -> None:
    """Partitions ahead, expired partitions dropped (retention), expired idempotency records."""
    async with ctx.db.transaction() as unit:
        await ensure_partitions(unit)
    async with ctx.db.transaction() as unit:
        await drop_expired(unit, ctx.settings.event_retention)
    purged = await ctx.idempotency.purge_expired()
    if purged:
        log.info("purged %d expired idempotency records", purged)


async def refresh_queue_depths(ctx: Context) -> None:
    """Set ``svc_queue_messages`` for every queue of the namespace, and the deliveries held in
    ordered lanes."""
    ctx.metrics.ordered_held.set(await OrderedLanes(ctx.db, owner="").held())
    for queue in await ctx.broker.depths():
        ctx.metrics.queue_depth.labels(queue.name).set(queue.messages)
        ctx.metrics.queue_consumers.labels(queue.name).set(queue.consumers)


async def every(
    interval: float, work: Callable[[], Awaitable[object]], stop: asyncio.Event
) -> None:
    """Run ``work`` every ``interval`` seconds until ``stop``; a failed run is logged."""
    while not stop.is_set():
        try:
            await work()
        except Exception:
            log.exception("periodic task failed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval)
