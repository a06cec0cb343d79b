"""Running a queue consumer: ack on success, requeue on any exception, drain on stop.

Every consumer of every role goes through ``consume``, so ack and reject are decided in this
one place: a handler that returns has its message acked (coalesced, see ``svc.acks``); one
that raises, or is cancelled, has it requeued. SIGTERM handling is the same everywhere:
stop taking messages, let in-flight handlers finish within the grace period, cancel (and so
requeue) the rest, send the last acks, close the channel.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from aio_pika.abc import AbstractIncomingMessage

from svc.acks import Acks
from svc.context import Context

log = logging.getLogger(__name__)

_BACKOFF = 1.0

Handler = Callable[[AbstractIncomingMessage], Awaitable[None]]


async def consume(
    ctx: Context, queue_name: str, handler: Handler, prefetch: int, stop: asyncio.Event
) -> None:
    """Consume ``queue_name`` with up to ``prefetch`` handlers running until ``stop`` is set."""
    running: set[asyncio.Task[None]] = set()
    acks = Acks(hold_limit=max(1, prefetch // 4))

    async def on_message(message: AbstractIncomingMessage) -> None:
        task = asyncio.current_task()
        assert task is not None
        running.add(task)
        acks.received(message)
        try:
            try:
                await handler(message)
            except Exception:
                log.exception("handler failed on %s; message requeued", queue_name)
                await asyncio.sleep(_BACKOFF)  # a broken dependency must not spin the CPU
                raise
        except BaseException as exc:  # failed, or cancelled at shutdown: back to the queue
            await acks.requeue(message)
            if not isinstance(exc, Exception):
                raise
        else:
            acks.finished(message)
        finally:
            running.discard(task)

    channel = await ctx.connection.channel()
    await channel.set_qos(prefetch_count=prefetch)
    queue = await channel.get_queue(queue_name, ensure=False)
    tag = await queue.consume(on_message)
    log.info("consuming %s (prefetch %d)", queue_name, prefetch)
    try:
        await stop.wait()
        await queue.cancel(tag)
        await _drain(running, ctx.settings.shutdown_grace, queue_name)
        await acks.settle()
    finally:
        await channel.close()


async def _drain(running: set[asyncio.Task[None]], grace: float, queue_name: str) -> None:
    if not running:
        return
    log.info("draining %d in-flight messages of %s", len(running), queue_name)
    _, pending = await asyncio.wait(set(running), timeout=grace)
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending)
