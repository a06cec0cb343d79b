"""Removing what a benchmark created: a namespace's queues, exchange and keys, baseline queues."""

from __future__ import annotations

from collections.abc import Iterable

import aio_pika
from redis.asyncio import Redis

from svc.context import topology_of
from svc.settings import Settings


async def delete_queues(
    amqp_url: str, queues: Iterable[str], exchanges: Iterable[str] = ()
) -> None:
    """Delete the named queues and exchanges; missing ones are fine."""
    named = [*((name, False) for name in queues), *((name, True) for name in exchanges)]
    async with await aio_pika.connect(amqp_url) as connection:
        channel = await connection.channel()
        for name, exchange in named:
            try:
                await (channel.exchange_delete(name) if exchange else channel.queue_delete(name))
            except Exception:  # a failed delete closes its channel: the next name gets a new one
                channel = await connection.channel()


async def delete_namespace(settings: Settings) -> None:
    """Delete one namespace's queues, exchange and Redis keys (nothing else is touched)."""
    topology = topology_of(settings)
    await delete_queues(settings.amqp_url, topology.work_queues(), [topology.events])
    async with Redis.from_url(settings.redis_url) as redis:
        keys = [key async for key in redis.scan_iter(match=f"{settings.namespace}:*", count=1000)]
        for start in range(0, len(keys), 1000):
            await redis.delete(*keys[start : start + 1000])
