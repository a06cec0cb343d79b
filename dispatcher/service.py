"""Running a dispatcher process."""

from __future__ import annotations

import asyncio
import contextlib

from dispatcher.sender import Sender, open_session
from dispatcher.worker import Worker
from svc.consumer import consume
from svc.context import Context


async def run(ctx: Context, stop: asyncio.Event) -> None:
    """Deliver jobs until ``stop``, then finish in-flight deliveries and close the session."""
    async with open_session(ctx.settings) as session:
        worker = Worker(ctx, Sender(session, ctx.settings))
        follower = asyncio.create_task(worker.cache.follow(ctx.redis, ctx.keys.endpoint_changes))
        try:
            await consume(
                ctx,
                ctx.topology.deliveries,
                worker.handle,
                ctx.settings.dispatcher_concurrency,
                stop,
            )
        finally:
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follower
