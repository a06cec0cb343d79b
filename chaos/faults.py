"""The faults, injected one at a time: what breaks, for how long, and how it ends."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from redis.asyncio import Redis

from chaos.pods import Pods
from chaos.receivers import Receivers
from chaos.servers import PrivatePostgres, PrivateRabbitMQ, PrivateRedis


@dataclass
class World:
    """Everything a fault can break."""

    pods: Pods
    rabbitmq: PrivateRabbitMQ
    postgres: PrivatePostgres
    redis: PrivateRedis
    receivers: Receivers


Action = Callable[[World], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Fault:
    """``inject``, wait ``down`` seconds, ``heal``; a fault without ``heal`` is instantaneous
    (what recovers from it is the service itself, or the Deployment restarting a pod)."""

    name: str
    title: str
    down: float
    inject: Action
    heal: Action | None = None


async def _nothing(world: World) -> None:
    """The control: the same load and the same flaky endpoint, nothing broken."""


def _kill(role: str) -> Action:
    async def kill(world: World) -> None:
        world.pods.kill(role)

    return kill


async def _rabbitmq_stop(world: World) -> None:
    await world.rabbitmq.stop_app()


async def _rabbitmq_start(world: World) -> None:
    await world.rabbitmq.start_app()


async def _postgres_stop(world: World) -> None:
    await asyncio.to_thread(world.postgres.stop)


async def _postgres_start(world: World) -> None:
    await asyncio.to_thread(world.postgres.start)


async def _redis_stop(world: World) -> None:
    await world.redis.stop()


async def _redis_start(world: World) -> None:
    await world.redis.start()


async def _redis_flushall(world: World) -> None:
    client = Redis.from_url(world.redis.url)
    try:
        await client.flushall()
    finally:
        await client.aclose()


async def _receivers_stop(world: World) -> None:
    await world.receivers.stop()


async def _receivers_start(world: World) -> None:
    await world.receivers.start()


def catalogue(outage: float = 15.0, redis_outage: float = 10.0) -> list[Fault]:
    """Every fault of the suite, in the order they run; outages last the given seconds."""
    return [
        Fault("baseline", "no fault", 0, _nothing),
        Fault("api-kill", "SIGKILL of the api", 0, _kill("api")),
        Fault("scheduler-kill", "SIGKILL of the scheduler", 0, _kill("scheduler")),
        Fault("dispatcher-kill", "SIGKILL of the dispatcher", 0, _kill("dispatcher")),
        Fault("rabbitmq-restart", "RabbitMQ stopped", outage, _rabbitmq_stop, _rabbitmq_start),
        Fault("postgres-restart", "PostgreSQL stopped", outage, _postgres_stop, _postgres_start),
        Fault("redis-restart", "Redis stopped", redis_outage, _redis_stop, _redis_start),
        Fault("redis-flushall", "Redis FLUSHALL", 0, _redis_flushall),
        Fault("receivers-down", "every receiver down", outage, _receivers_stop, _receivers_start),
    ]
