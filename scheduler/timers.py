"""Periodic work: the outbox sweep and queue-depth gauges."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

import aio_pika

from svc.context import Context
from svc.publish import publish_staged

log = logging.getLogger(__name__)


async def sweep_outbox(ctx: Context) -> int:
    """Re-publish events whose publish was never confirmed; returns how many."""
    cutoff = int((time.time() - ctx.settings.outbox_sweep_age) * 1000)
    count = 0
    for event_id in await ctx.events.stragglers(cutoff):
        stored = await ctx.events.load(event_id)
        if stored is None:  # expired before it could be sent: nothing left to publish
            await ctx.events.published(event_id)
            continue
        await publish_staged(ctx, stored.event, stored.org)
        ctx.metrics.outbox_republished.inc()
        count += 1
    if count:
        log.warning("outbox sweep re-published %d events", count)
    return count


async def refresh_queue_depths(ctx: Context) -> None:
    """Set ``svc_queue_messages`` for every queue of the namespace."""
    channel = await ctx.connection.channel()
    try:
        prefix = len(ctx.topology.namespace) + 1
        for name in ctx.topology.work_queues():
            with contextlib.suppress(aio_pika.exceptions.ChannelClosed):
                queue = await channel.declare_queue(name, passive=True)
                ctx.metrics.queue_depth.labels(name[prefix:]).set(
                    queue.declaration_result.message_count or 0
                )
    finally:
        await channel.close()


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
