"""Every publish of the service, on the one channel of a process opened in confirm mode.

Events go to the exchange ``<ns>.events`` with their type as the routing key; delivery jobs,
resend and test requests and rejected messages go through the default exchange to the queue
they name. Each returns once the broker confirmed the message (the channel raises for one no
queue takes, so a missing queue never loses a job). Batches of events published again and of
delivery jobs go in one socket write (``svc.amqp.batch_publish``). Whether the broker blocks
publishing (a memory or disk alarm) is the caller's question: a job must wait for it, an
event or a request may leave its outbox row to the sweep instead.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from aio_pika.abc import AbstractChannel, AbstractExchange, AbstractRobustConnection

from svc.amqp import flow
from svc.amqp.batch_publish import Outgoing, publish_confirmed
from svc.amqp.commands import Resend
from svc.amqp.connections import connect
from svc.amqp.delivery_jobs import DeliveryJob
from svc.amqp.messages import event_message, event_properties, rejected_message
from svc.amqp.queues import QueueDepth, depths
from svc.amqp.received import Received
from svc.amqp.topology import Topology, underlay
from svc.envelope import Event


class Broker:
    """The process's publishing channel and the exchange of events, with the topology's names."""

    def __init__(
        self,
        connection: AbstractRobustConnection,
        channel: AbstractChannel,
        exchange: AbstractExchange,
        topology: Topology,
    ) -> None:
        self.connection = connection
        self.channel = channel
        """Opened in confirm mode; a message no queue takes raises instead of vanishing."""
        self.exchange = exchange
        self.topology = topology

    def blocked(self) -> bool:
        """RabbitMQ blocks this process's publishing connection now (``svc.amqp.flow``)."""
        return flow.blocked(self.connection)

    def is_open(self) -> bool:
        """The connection and the publishing channel are open."""
        return not self.connection.is_closed and not self.channel.is_closed

    async def event(self, event: Event, org: str, traceparent: str | None = None) -> None:
        """Publish ``event`` of ``org`` to the events exchange."""
        message = event_message(event, org, traceparent)
        await self.exchange.publish(message, routing_key=event.type)

    async def events_again(self, stored: Sequence[tuple[Event, str]]) -> None:
        """Publish events (each with its organisation) again in one write, each marked
        ``svc-again``; raises unless every one is confirmed."""
        messages = [
            Outgoing(event.type, event.body, event_properties(event, org, again=True))
            for event, org in stored
        ]
        await publish_confirmed(await underlay(self.channel), self.exchange.name, messages)

    async def job(self, job: DeliveryJob, queue: str) -> None:
        """Publish one delivery job to ``queue``."""
        await self.channel.default_exchange.publish(job.to_message(), routing_key=queue)

    async def jobs(self, jobs: Sequence[DeliveryJob], queue: str) -> None:
        """Publish delivery jobs to ``queue`` in one write; raises unless each is confirmed."""
        messages = [
            Outgoing(queue, m.body, m.properties) for m in map(DeliveryJob.to_message, jobs)
        ]
        await publish_confirmed(await underlay(self.channel), "", messages)

    async def command(self, command: Resend) -> None:
        """Publish a resend or test request to ``<ns>.commands``."""
        await self.channel.default_exchange.publish(
            command.to_message(), routing_key=self.topology.commands
        )

    async def rejected(self, message: Received, reason: str, detail: str) -> None:
        """Keep a message the service cannot accept in ``<ns>.rejected``."""
        await self.channel.default_exchange.publish(
            rejected_message(message, reason, detail), routing_key=self.topology.rejected
        )

    async def depths(self) -> list[QueueDepth]:
        """Messages and consumers of every work queue of the namespace."""
        return await depths(self.connection, self.topology)


@asynccontextmanager
async def open_broker(urls: Sequence[str], topology: Topology) -> AsyncIterator[Broker]:
    """Connect to the first node of ``urls`` that answers, open the publishing channel and
    declare ``topology``; the connection is closed on exit."""
    connection = await connect(urls)
    try:
        channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
        exchange = await topology.declare(channel)
        yield Broker(connection, channel, exchange, topology)
    finally:
        await connection.close()
