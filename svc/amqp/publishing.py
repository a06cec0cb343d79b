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

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from aio_pika.abc import AbstractChannel, AbstractExchange, AbstractRobustConnection

from svc.amqp import flow
from svc.amqp.batch_publish import Outgoing, confirmed, publish_confirmed, publish_each
from svc.amqp.commands import Resend
from svc.amqp.connections import connect
from svc.amqp.delivery_jobs import DeliveryJob
from svc.amqp.messages import event_properties, rejected_message
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
        self._events = Coalesced(channel, exchange.name)

    def blocked(self) -> bool:
        """RabbitMQ blocks this process's publishing connection now (``svc.amqp.flow``)."""
        return flow.blocked(self.connection)

    def is_open(self) -> bool:
        """The connection and the publishing channel are open."""
        return not self.connection.is_closed and not self.channel.is_closed

    async def event(self, event: Event, org: str, traceparent: str | None = None) -> None:
        """Publish ``event`` of ``org`` to the events exchange: in one write with the events
        that concurrent callers publish in the same turn of the event loop, confirmed one by
        one (a refusal fails only its own)."""
        properties = event_properties(event, org, traceparent=traceparent)
        await self._events.publish(Outgoing(event.type, event.body, properties))

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


_Waiting = tuple[Outgoing, "asyncio.Future[asyncio.Future[Any]]"]
"""A message and where its caller waits for its confirm."""


class Coalesced:
    """Publishes to one exchange that callers make in the same turn of the event loop, sent
    in one write (``publish_each``); each caller waits for its own message's confirm."""

    def __init__(self, channel: AbstractChannel, exchange: str) -> None:
        self._channel = channel
        self._exchange = exchange
        self._waiting: list[_Waiting] = []
        self._writes: set[asyncio.Task[None]] = set()

    async def publish(self, message: Outgoing) -> None:
        """Publish ``message`` and wait for its confirm; raises as ``publish_confirmed``."""
        loop = asyncio.get_running_loop()
        sent: asyncio.Future[asyncio.Future[Any]] = loop.create_future()
        if not self._waiting:
            loop.call_soon(self._write)
        self._waiting.append((message, sent))
        await confirmed(await sent)

    def _write(self) -> None:
        batch, self._waiting = self._waiting, []
        task = asyncio.create_task(self._send(batch))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _send(self, batch: list[_Waiting]) -> None:
        try:
            channel = await underlay(self._channel)
            confirms = await publish_each(channel, self._exchange, [m for m, _ in batch])
        except BaseException as failed:  # not written: every caller of the batch is told
            for _, sent in batch:
                if sent.done():
                    continue
                if isinstance(failed, Exception):
                    sent.set_exception(failed)
                else:  # cancelled (the process is stopping)
                    sent.cancel()
            if not isinstance(failed, Exception):
                raise
            return
        for (_, sent), confirm in zip(batch, confirms, strict=True):
            if sent.done():  # its caller stopped waiting: nobody reads the confirm
                confirm.add_done_callback(_read)
            else:
                sent.set_result(confirm)


def _read(confirm: asyncio.Future[Any]) -> None:
    if not confirm.cancelled():
        confirm.exception()  # read, so a refusal nobody waited for is not logged as lost


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
