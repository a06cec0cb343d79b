"""Running a dispatcher process: three sources (events' fan-out, delivery jobs, ordered lanes)
and the one delivery engine they all hand their deliveries to."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource

from dispatcher.endpoints import EndpointCache
from dispatcher.engine import Deliverer
from dispatcher.fanout import FanOut
from dispatcher.jobs import Jobs
from dispatcher.ordered import Lanes
from dispatcher.sender import Sender, open_session
from svc.amqp.consuming import consume
from svc.context import Context
from svc.settings import Settings

OTHER_FILES = 256
"""Open files a dispatcher needs besides its delivery connections and database pool: the
broker, Redis, its HTTP server's clients, logs, libraries."""

log = logging.getLogger(__name__)


async def run(ctx: Context, stop: asyncio.Event) -> None:
    """Deliver until ``stop``, then finish in-flight deliveries and close the session."""
    settings, topology = ctx.settings, ctx.topology
    ensure_open_files(open_files_needed(settings))
    async with open_session(settings) as session:
        cache = EndpointCache(ctx.endpoints, settings.endpoint_cache_ttl)
        sender = Sender(session, settings, ctx.tracing)
        engine = Deliverer(ctx, sender)
        lanes = Lanes(ctx, cache, engine)
        fan_out = FanOut(ctx, cache, engine, lanes)
        jobs = Jobs(ctx, cache, engine)
        background = (
            asyncio.create_task(cache.follow(ctx.redis, ctx.keys.endpoint_changes)),
            asyncio.create_task(engine.pauses.follow()),
            asyncio.create_task(lanes.run(stop)),
        )
        try:
            async with asyncio.TaskGroup() as group:
                prefetch = settings.dispatcher_concurrency
                group.create_task(
                    consume(ctx, topology.fanout, fan_out.handle, prefetch, stop, fan_out.acks)
                )
                group.create_task(
                    consume(ctx, topology.deliveries, jobs.handle, prefetch, stop, jobs.acks)
                )
        finally:
            for task in background:
                task.cancel()
            for task in background:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await engine.close()
            await sender.close()
            await cache.close()


def open_files_needed(settings: Settings) -> int:
    return settings.dispatcher_concurrency + settings.database_pool_size + OTHER_FILES


def ensure_open_files(need: int) -> int:
    """Raise this process's soft limit of open files to ``need`` when it is lower (container
    runtimes often start processes at 1,024), as far as the hard limit allows; warn when that
    is not far enough. Returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return soft
    wanted = need if hard == resource.RLIM_INFINITY else min(need, hard)
    if wanted > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    if wanted < need:
        log.warning(
            "open files are limited to %d; SVC_DISPATCHER_CONCURRENCY connections need %d: "
            "deliveries past the limit fail to connect (raise the limit or lower it)",
            wanted,
            need,
        )
    return wanted
