"""The context of a process: settings, connections, stores and metrics, opened and closed once."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from aio_pika.abc import AbstractChannel, AbstractExchange, AbstractRobustConnection
from redis.asyncio import BlockingConnectionPool, Redis

from svc import amqp
from svc.metrics import Metrics
from svc.settings import Settings
from svc.store.apikeys import ApiKeys
from svc.store.deliveries import DeliveryLog
from svc.store.endpoints import Endpoints
from svc.store.events import Events
from svc.store.idempotency import Idempotency
from svc.store.keys import Keys
from svc.store.payments import Payments
from svc.store.terminals import Terminals

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Context:
    """What every role works with; passed explicitly, never global."""

    settings: Settings
    topology: amqp.Topology
    redis: Redis
    connection: AbstractRobustConnection
    channel: AbstractChannel
    exchange: AbstractExchange
    metrics: Metrics
    keys: Keys
    api_keys: ApiKeys
    endpoints: Endpoints
    events: Events
    deliveries: DeliveryLog
    payments: Payments
    terminals: Terminals
    idempotency: Idempotency

    async def ready(self) -> bool:
        """True when Redis answers and the broker connection is open."""
        try:
            await self.redis.ping()
        except Exception:  # any failure means not ready
            return False
        return not self.connection.is_closed and not self.channel.is_closed


def topology_of(settings: Settings) -> amqp.Topology:
    return amqp.Topology.build(
        settings.namespace,
        settings.retry_ladder,
        round(settings.defer_delay * 1000),
        settings.queue_type,
    )


@asynccontextmanager
async def open_context(
    settings: Settings, metrics: Metrics | None = None
) -> AsyncIterator[Context]:
    """Connect to Redis and RabbitMQ, declare the topology, and close both on exit."""
    # A blocking pool: a burst (thousands of long polls) waits for a free connection instead
    # of failing with "Too many connections" at redis-py's default cap of 100.
    pool = BlockingConnectionPool.from_url(
        settings.redis_url, max_connections=settings.redis_max_connections, timeout=10
    )
    redis: Redis = Redis.from_pool(pool)
    connection = await amqp.connect(settings.amqp_url)
    try:
        # Unroutable messages raise instead of vanishing, so a missing queue never loses a job.
        channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
        topology = topology_of(settings)
        exchange = await topology.declare(channel)
        keys = Keys(settings.namespace)
        events = Events(redis, keys, settings.event_retention)
        yield Context(
            settings=settings,
            topology=topology,
            redis=redis,
            connection=connection,
            channel=channel,
            exchange=exchange,
            metrics=metrics or Metrics(),
            keys=keys,
            api_keys=ApiKeys(redis, keys),
            endpoints=Endpoints(redis, keys),
            events=events,
            deliveries=DeliveryLog(
                redis, keys, settings.event_retention, settings.endpoint_log_length
            ),
            payments=Payments(redis, keys, events, settings.payment_retention),
            terminals=Terminals(redis, keys, events),
            idempotency=Idempotency(redis, keys, settings.idempotency_ttl),
        )
    finally:
        await connection.close()
        await redis.aclose()
