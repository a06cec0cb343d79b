"""Running a dispatcher process: events (fan-out) and delivery jobs, one worker for both."""

from __future__ import annotations

import asyncio
import contextlib

from dispatcher.fanout import FanOut
from dispatcher.ordered import Lanes
from dispatcher.sender import Sender, ensure_open_files, open_files_needed, open_session
from dispatcher.worker import Worker
from svc.consumer import consume
from svc.context import Context


async def run(ctx: Context, stop: asyncio.Event) -> None:
    """Deliver until ``stop``, then finish in-flight deliveries and close the session."""
    settings, topology = ctx.settings, ctx.topology
    ensure_open_files(open_files_needed(settings))
    async with open_session(settings) as session:
        worker = Worker(ctx, Sender(session, settings, ctx.tracing))
        lanes = Lanes(ctx, worker)
        fan_out = FanOut(ctx, worker, lanes)
        background = (
            asyncio.create_task(worker.cache.follow(ctx.redis, ctx.keys.endpoint_changes)),
            asyncio.create_task(worker.pauses.follow()),
            asyncio.create_task(lanes.run(stop)),
        )
        try:
            async with asyncio.TaskGroup() as group:
                prefetch = settings.dispatcher_concurrency
                group.create_task(
                    consume(ctx, topology.fanout, fan_out.handle, prefetch, stop, fan_out.acks)
                )
                group.create_task(consume(ctx, topology.deliveries, worker.handle, prefetch, stop))
            await fan_out.drain()
        finally:
            for task in background:
                task.cancel()
            for task in background:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await worker.cache.close()
