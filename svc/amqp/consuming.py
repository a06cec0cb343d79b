"""Running a queue consumer: ack on success, requeue on any exception, come back after a
broker loss, drain on stop.

Every consumer of every role goes through ``consume``, so ack and reject are decided in this
one place: a handler that returns has its message acked (coalesced, see ``svc.amqp.acks``); one
that raises, or is cancelled, has it requeued. Each consumer holds a connection of its own:
when it is lost (a broker restart, a closed channel), the consumer re-declares the topology
and consumes again with growing back-off, at the next node when ``SVC_AMQP_URL`` names
several (``svc.amqp.connections``), without a process restart; messages of the dead
channel are redelivered by the broker, so their acks are dropped rather than sent. While a
consumer is down the process is not ready (``Consumers``). SIGTERM handling is the same
everywhere: stop taking messages, let in-flight handlers finish within the grace period,
cancel (and so requeue) the rest, send the last acks, close the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol

import aio_pika
from aio_pika.abc import AbstractChannel
from aiormq.abc import DeliveredMessage

from svc.amqp.acks import REQUEUE_AFTER, Acks
from svc.amqp.connections import CONNECT_TIMEOUT, Nodes
from svc.amqp.received import Received
from svc.amqp.topology import Topology, underlay
from svc.settings import Settings

log = logging.getLogger(__name__)

RECONNECT_FIRST = 0.2
RECONNECT_MAX = 5.0


class Handed(enum.Enum):
    """What a handler returns when it has handed its message on: whoever took it settles it
    through the consumer's ``Acks`` (``finished``, or ``fail`` to give it back)."""

    ON = "on"


Handler = Callable[[Received], Awaitable[Handed | None]]


class Consumers:
    """The queues this process consumes, and whether each has a live consumer now."""

    def __init__(self) -> None:
        self._live: dict[str, bool] = {}

    def expect(self, queue: str) -> None:
        self._live.setdefault(queue, False)

    def live(self, queue: str, up: bool) -> None:
        self._live[queue] = up

    def down(self) -> list[str]:
        """Queues this process should consume but does not, now."""
        return sorted(queue for queue, up in self._live.items() if not up)


class Host(Protocol):
    """What a consumer needs of its process (the process context has it)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def topology(self) -> Topology: ...

    @property
    def consumers(self) -> Consumers: ...


async def consume(
    ctx: Host,
    queue_name: str,
    handler: Handler,
    prefetch: int,
    stop: asyncio.Event,
    acks: Acks | None = None,
) -> None:
    """Consume ``queue_name`` with up to ``prefetch`` messages unsettled until ``stop`` is set.

    A handler that hands its message on (returns ``Handed.ON``) is given the ``acks`` that
    settle it; at stop, such messages get the grace period too.
    """
    running: set[asyncio.Task[None]] = set()
    acks = acks or Acks.for_prefetch(prefetch)
    ctx.consumers.expect(queue_name)
    nodes = Nodes(ctx.settings.amqp_urls)

    async def on_message(delivered: DeliveredMessage) -> None:
        message = Received(delivered)
        task = asyncio.current_task()
        assert task is not None
        running.add(task)
        acks.received(message)
        try:
            try:
                handed = await handler(message)
            except Exception:
                log.exception("handler failed on %s; message requeued", queue_name)
                await asyncio.sleep(REQUEUE_AFTER)  # a broken dependency must not spin the CPU
                raise
        except BaseException as exc:  # failed, or cancelled at shutdown: back to the queue
            await acks.requeue(message)
            if not isinstance(exc, Exception):
                raise
        else:
            if handed is None:
                acks.finished(message)
        finally:
            running.discard(task)

    delay = RECONNECT_FIRST
    while not stop.is_set():
        try:
            async with _channel(nodes) as (channel, lost):
                await channel.set_qos(prefetch_count=prefetch)
                await ctx.topology.declare(channel)
                # Messages are taken on aiormq's channel: one task per message, no
                # aio-pika message object (see ``svc.amqp.received``).
                raw = await underlay(channel)
                tag = (await raw.basic_consume(queue_name, on_message)).consumer_tag
                assert tag is not None
                ctx.consumers.live(queue_name, True)
                nodes.connected()
                log.info("consuming %s at %s (prefetch %d)", queue_name, nodes.name, prefetch)
                delay = RECONNECT_FIRST
                await _first(stop, lost)
                ctx.consumers.live(queue_name, False)
                if stop.is_set():
                    with contextlib.suppress(Exception):
                        await raw.basic_cancel(tag)
                    await _drain(running, ctx.settings.shutdown_grace, queue_name, acks)
                    await acks.settle()
                    return
                log.warning(
                    "lost the consumer of %s at %s; consuming again", queue_name, nodes.name
                )
                nodes.failed()
        except Exception as exc:  # broker down or refusing: try again shortly, at the next node
            log.warning(
                "cannot consume %s at %s (%s); again in %.1f s", queue_name, nodes.name, exc, delay
            )
            nodes.failed()
        finally:
            ctx.consumers.live(queue_name, False)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), delay)
        delay = min(delay * 2, RECONNECT_MAX)
    await _drain(running, ctx.settings.shutdown_grace, queue_name)


@contextlib.asynccontextmanager
async def _channel(nodes: Nodes) -> AsyncIterator[tuple[AbstractChannel, asyncio.Event]]:
    """A channel on a connection of this consumer's own to the current node, and an event set
    when either dies."""
    lost = asyncio.Event()
    connection = await aio_pika.connect(nodes.current, timeout=CONNECT_TIMEOUT)

    def closed(_sender: object, reason: object = None) -> None:
        if not lost.is_set():
            log.warning("consumer channel closed: %s", reason)
        lost.set()

    try:
        connection.close_callbacks.add(closed)
        channel = await connection.channel()
        channel.close_callbacks.add(closed)
        yield channel, lost
    finally:
        with contextlib.suppress(Exception):
            await connection.close()


async def _first(stop: asyncio.Event, lost: asyncio.Event) -> None:
    waits = {asyncio.create_task(stop.wait()), asyncio.create_task(lost.wait())}
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in waits:
            task.cancel()


async def _drain(
    running: set[asyncio.Task[None]], grace: float, queue_name: str, acks: Acks | None = None
) -> None:
    """Let the running handlers, and the work of messages handed on, finish within ``grace``;
    cancel the handlers still running then (their messages go back to the queue)."""
    handed = acks.unfinished() if acks is not None else 0
    if not running and not handed:
        return
    log.info("draining %d in-flight messages of %s", max(len(running), handed), queue_name)
    started = asyncio.get_running_loop().time()
    pending: set[asyncio.Task[None]] = set()
    if running:
        _, pending = await asyncio.wait(set(running), timeout=grace)
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending)
    if acks is not None:
        await acks.handed_back(max(0.0, grace - (asyncio.get_running_loop().time() - started)))
