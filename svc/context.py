"""The context of a process: settings, connections, repositories and metrics, opened once."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from redis.asyncio import BlockingConnectionPool, Redis

from svc.amqp.consuming import Consumers
from svc.amqp.publishing import Broker, open_broker
from svc.amqp.topology import Topology
from svc.crypto import SecretBox
from svc.db import Database, Unit, open_database
from svc.db.migrate import check_current
from svc.db.partitions import ensure_partitions
from svc.events.store.commands import CommandOutbox
from svc.events.store.deliveries import DeliveryLog
from svc.events.store.events import Events
from svc.events.store.outbox import Publisher
from svc.group_commit import Batcher
from svc.idempotency import Idempotency
from svc.keys.store import ApiKeys, KeyChanges
from svc.metrics import Metrics
from svc.money.store.chargebacks import Chargebacks
from svc.money.store.ledger import Ledger
from svc.money.store.payouts import Payouts
from svc.money.store.refunds import Refunds
from svc.money.store.tariffs import Tariffs
from svc.notices.store import Notices
from svc.orgs.store import Organisations
from svc.payments.store import Payments
from svc.portal.store import PortalSessions
from svc.pubsub.wakeups import Signal
from svc.rediskeys import Keys
from svc.settings import Settings
from svc.terminal.store import Presence, Terminals
from svc.tracing import Tracing
from svc.webhooks.store import Endpoints

if TYPE_CHECKING:  # the handles a test or a harness may use; the roles publish through broker
    from aio_pika.abc import AbstractChannel, AbstractExchange, AbstractRobustConnection

log = logging.getLogger(__name__)


HANDOFF_MARGIN = 5.0
"""A handed-off delivery waits this much longer than a delivery may take (see the dispatcher)."""


@dataclass(slots=True)
class Context:
    """What every role works with; passed explicitly, never global."""

    settings: Settings
    topology: Topology
    db: Database
    redis: Redis
    connection: AbstractRobustConnection
    channel: AbstractChannel
    exchange: AbstractExchange
    broker: Broker
    metrics: Metrics
    box: SecretBox
    keys: Keys
    orgs: Organisations
    api_keys: ApiKeys
    key_changes: KeyChanges
    endpoints: Endpoints
    events: Events
    command_outbox: CommandOutbox
    deliveries: DeliveryLog
    payments: Payments
    terminals: Terminals
    presence: Presence
    ledger: Ledger
    tariffs: Tariffs
    refunds: Refunds
    chargebacks: Chargebacks
    payouts: Payouts
    notices: Notices
    portal: PortalSessions
    idempotency: Idempotency
    publisher: Publisher
    consumers: Consumers
    tracing: Tracing
    _signals: Batcher[bytes, None] | None = field(default=None, init=False, repr=False)

    @asynccontextmanager
    async def unit(self, joined: Unit | None = None) -> AsyncIterator[Unit]:
        """A unit of work: one transaction, then its effects (publishes, signals).

        With ``joined``, the block runs inside that caller's unit and commits with it.
        An effect that fails after the commit is logged; the committed change stands.
        """
        if joined is not None:
            yield joined
            return
        async with self.db.transaction() as unit:
            yield unit
        for effect in unit.effects:
            try:
                await effect()
            except Exception:
                log.warning("an effect after commit failed", exc_info=True)

    async def signal(self, signal: Signal) -> None:
        """Wake listeners in every API process (long polls, streams, terminal connections).

        Signals of concurrent requests share one Redis round trip (a pipeline of their
        ``PUBLISH``es); each caller still waits until its own was sent."""
        if self._signals is None:
            self._signals = Batcher(self._publish_signals, 0)
        await self._signals.submit(signal.dumps())

    async def _publish_signals(self, signals: list[bytes]) -> list[None]:
        async with self.redis.pipeline(transaction=False) as pipe:
            for raw in signals:
                pipe.publish(self.keys.signals, raw)
            await pipe.execute()
        return [None] * len(signals)

    def signal_after(self, unit: Unit, signal: Signal) -> None:
        unit.after_commit(lambda: self.signal(signal))

    def blocked(self) -> bool:
        """RabbitMQ blocks this process's publishing connection now (see ``svc.amqp.flow``)."""
        return self.broker.blocked()

    def warnings(self) -> dict[str, bool]:
        """What ``/ready`` reports without failing: ``rabbitmq_blocked`` while the broker
        blocks this process's publishes (a memory or disk alarm). The API still takes payments
        then (their events wait in the outbox) and a dispatcher still delivers (its retries
        wait), so taking the pod out of its Service would only make things worse."""
        return {"rabbitmq_blocked": self.blocked()}

    async def readiness(self) -> dict[str, bool]:
        """Each check of ``/ready``: PostgreSQL and Redis answer, the broker connection is
        open, and every queue this process should consume has a live consumer."""
        try:
            redis = bool(await self.redis.ping())
        except Exception:  # any failure means not reachable
            redis = False
        return {
            "postgresql": await self.db.ping(),
            "redis": redis,
            "rabbitmq": self.broker.is_open(),
            "consumers": not self.consumers.down(),
        }


def topology_of(settings: Settings) -> Topology:
    return Topology.build(
        settings.namespace,
        settings.retry_ladder,
        round(settings.defer_delay * 1000),
        round((settings.delivery_timeout + HANDOFF_MARGIN) * 1000),
        settings.queue_type,
    )


@asynccontextmanager
async def open_context(
    settings: Settings, metrics: Metrics | None = None, tracing: Tracing | None = None
) -> AsyncIterator[Context]:
    """Connect to PostgreSQL, Redis and RabbitMQ, declare the topology; close all on exit.

    Raises SecretKeyError without a usable ``SVC_SECRET_KEY`` and MigrationError when the
    database schema is behind the code.
    """
    box = SecretBox.parse(settings.secret_key)
    metrics = metrics or Metrics()
    if tracing is None:
        tracing = Tracing.of(settings, "svc")
    async with open_database(
        settings.database_url,
        settings.database_pool_size,
        statement_timeout=settings.database_statement_timeout,
        acquire_timeout=settings.database_acquire_timeout,
    ) as db:
        async with db.connection() as conn:
            await check_current(conn.conn)
        async with db.transaction() as unit:
            await ensure_partitions(unit)
        # A blocking pool: a burst (thousands of long polls) waits for a free connection
        # instead of failing with "Too many connections" at redis-py's default cap of 100.
        pool = BlockingConnectionPool.from_url(
            settings.redis_url, max_connections=settings.redis_max_connections, timeout=10
        )
        redis: Redis = Redis.from_pool(pool)
        topology = topology_of(settings)
        try:
            async with open_broker(settings.amqp_urls, topology) as broker:
                orgs = Organisations(db)
                events = Events(db)
                metrics.amqp_blocked.set_function(lambda: float(broker.blocked()))
                publisher = Publisher(
                    broker,
                    events,
                    metrics,
                    settings.publish_timeout,
                    tracing,
                    batch_timeout=settings.batch_publish_timeout,
                )
                try:
                    yield Context(
                        settings=settings.resolved(),
                        topology=topology,
                        db=db,
                        redis=redis,
                        connection=broker.connection,
                        channel=broker.channel,
                        exchange=broker.exchange,
                        broker=broker,
                        metrics=metrics,
                        box=box,
                        keys=Keys(settings.namespace),
                        orgs=orgs,
                        api_keys=ApiKeys(db, orgs),
                        key_changes=KeyChanges(redis, Keys(settings.namespace)),
                        endpoints=Endpoints(db, box),
                        events=events,
                        command_outbox=CommandOutbox(db),
                        deliveries=DeliveryLog(db),
                        payments=Payments(db),
                        terminals=Terminals(db),
                        presence=Presence(redis, Keys(settings.namespace)),
                        ledger=Ledger(db),
                        tariffs=Tariffs(db),
                        refunds=Refunds(db),
                        chargebacks=Chargebacks(db),
                        payouts=Payouts(db),
                        notices=Notices(db),
                        portal=PortalSessions(db),
                        idempotency=Idempotency(db, box, settings.idempotency_ttl),
                        publisher=publisher,
                        consumers=Consumers(),
                        tracing=tracing,
                    )
                finally:
                    await publisher.close()
        finally:
            await redis.aclose()
            tracing.shutdown()
