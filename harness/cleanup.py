"""Removing what a benchmark created: a namespace's queues, exchange and keys, baseline queues."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

import aio_pika
from redis.asyncio import Redis

from svc.context import topology_of
from svc.settings import Settings


async def delete_queues(
    amqp_url: str, queues: Iterable[str], exchanges: Iterable[str] = ()
) -> None:
    """Delete the named queues and exchanges; missing ones are fine."""
    connection = await aio_pika.connect(amqp_url)
    async with connection:
        for name in queues:
            # A failed delete closes its channel, so each name gets a fresh one.
            channel = await connection.channel()
            with contextlib.suppress(Exception):
                await channel.queue_delete(name)
            with contextlib.suppress(Exception):
                await channel.close()
        for name in exchanges:
            channel = await connection.channel()
            with contextlib.suppress(Exception):
                await channel.exchange_delete(name)
            with contextlib.suppress(Exception):
                await channel.close()


async def delete_namespace(settings: Settings) -> None:
    """Delete one namespace's queues, exchange and Redis keys (nothing else is touched)."""
    topology = topology_of(settings)
    await delete_queues(settings.amqp_url, topology.work_queues(), [topology.events])
    redis = Redis.from_url(settings.redis_url)
    try:
        batch: list[bytes] = []
        async for key in redis.scan_iter(match=f"{settings.namespace}:*", count=1000):
            batch.append(key)
            if len(batch) >= 1000:
                await redis.delete(*batch)
                batch = []
        if batch:
            await redis.delete(*batch)
    finally:
        await redis.aclose()
