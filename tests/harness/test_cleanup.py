"""Deleting a namespace takes its queues, its exchange and its Redis keys, and nothing else."""

from __future__ import annotations

import aio_pika
from redis.asyncio import Redis

from harness.cleanup import delete_namespace
from svc.context import open_context, topology_of
from svc.settings import Settings


async def _exists(amqp_url: str, name: str, exchange: bool = False) -> bool:
    async with await aio_pika.connect(amqp_url) as connection:
        channel = await connection.channel()
        try:
            if exchange:
                await channel.get_exchange(name, ensure=True)
            else:
                await channel.declare_queue(name, passive=True)
        except aio_pika.exceptions.ChannelClosed:
            return False
        return True


async def test_a_namespace_is_deleted_whole_and_alone(settings: Settings) -> None:
    topology = topology_of(settings)
    async with open_context(settings):  # declares every queue and the events exchange
        pass
    other = f"{settings.namespace}x"
    async with Redis.from_url(settings.redis_url) as redis:
        await redis.set(f"{settings.namespace}:probe", "1")
        await redis.set(f"{other}:probe", "1")
        queues = list(topology.work_queues())
        assert queues and all([await _exists(settings.amqp_url, q) for q in queues])
        await delete_namespace(settings)
        assert not any([await _exists(settings.amqp_url, q) for q in queues])
        assert not await _exists(settings.amqp_url, topology.events, exchange=True)
        assert await redis.get(f"{settings.namespace}:probe") is None
        assert await redis.get(f"{other}:probe") == b"1"
        await redis.delete(f"{other}:probe")


async def test_deleting_a_namespace_again_finds_nothing_and_passes(settings: Settings) -> None:
    async with open_context(settings):
        pass
    await delete_namespace(settings)
    await delete_namespace(settings)  # every name is gone already: each delete still passes
    assert not await _exists(settings.amqp_url, next(iter(topology_of(settings).work_queues())))
