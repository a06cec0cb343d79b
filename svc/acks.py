"""Coalesced acks: a run of finished messages is settled by one ``basic.ack(multiple)``.

A multiple-ack of tag T settles every unsettled message of the channel up to T, so it may
only cover messages that are finished: ``Acks`` keeps the channel's open delivery tags in
arrival order and acks the finished prefix. A message that must go back to its queue is
rejected while its tag still blocks the prefix, so no multiple-ack can pass over it first.
Finished messages waiting behind a long-running one (a delivery to a slow endpoint) hold
prefetch slots, so past ``hold_limit`` of them they are acked one by one instead.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from aio_pika.abc import AbstractIncomingMessage

log = logging.getLogger(__name__)


class Acks:
    """Settles the messages of one consumer."""

    def __init__(self, hold_limit: int) -> None:
        self._hold_limit = hold_limit
        self._channel: object = None
        # Delivery tag → the message once finished (None while its handler runs), in tag order.
        self._open: dict[int, AbstractIncomingMessage | None] = {}
        self._held = 0
        self._flush_pending = False
        self._sending: set[asyncio.Task[None]] = set()

    def received(self, message: AbstractIncomingMessage) -> None:
        """A handler starts on ``message`` (handlers start in delivery order)."""
        if message.channel is not self._channel:
            # A reopened channel numbers its deliveries anew; the old ones were requeued.
            self._channel = message.channel
            self._open.clear()
            self._held = 0
        self._open[_tag(message)] = None

    def finished(self, message: AbstractIncomingMessage) -> None:
        """``message`` is done with: ack it, with its neighbours, at the end of this loop turn."""
        if message.channel is not self._channel or _closed(message):
            return  # its channel closed; the broker has put it back already
        self._open[_tag(message)] = message
        self._held += 1
        if not self._flush_pending:
            self._flush_pending = True
            asyncio.get_running_loop().call_soon(self._flush)

    async def requeue(self, message: AbstractIncomingMessage) -> None:
        """Give ``message`` back to its queue; only then may acks pass over its tag."""
        if _closed(message):  # the broker requeued it when the channel closed
            if message.channel is self._channel:
                self._open.pop(_tag(message), None)
            return
        try:
            await message.reject(requeue=True)
        except Exception as exc:  # the channel closed: the broker requeues it by itself
            log.warning("reject not sent: %s", exc)
        finally:
            if message.channel is self._channel:
                self._open.pop(_tag(message), None)

    async def settle(self) -> None:
        """Ack everything finished now and wait until the broker has been told."""
        self._flush(everything=True)
        if self._sending:
            await asyncio.wait(set(self._sending))

    def _flush(self, everything: bool = False) -> None:
        self._flush_pending = False
        last = None
        for tag, message in self._open.items():
            if message is None:
                break
            last = tag
        if last is not None:
            finished = 0
            while True:
                tag, message = next(iter(self._open.items()))
                del self._open[tag]
                finished += 1
                if tag == last:
                    break
            self._held -= finished
            assert message is not None
            self._send(message.ack(multiple=True))
        if self._held > self._hold_limit or (everything and self._held):
            for tag, message in list(self._open.items()):
                if message is not None:
                    del self._open[tag]
                    self._send(message.ack())
            self._held = 0

    def _send(self, ack: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(ack)
        self._sending.add(task)
        task.add_done_callback(self._sent)

    def _sent(self, task: asyncio.Task[None]) -> None:
        self._sending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            # The channel closed under the ack: the broker requeues those messages itself.
            log.warning("ack not sent: %s", task.exception())


def _closed(message: AbstractIncomingMessage) -> bool:
    return bool(getattr(message.channel, "is_closed", False))


def _tag(message: AbstractIncomingMessage) -> int:
    tag = message.delivery_tag
    assert tag is not None, "consumers here always ack explicitly"
    return tag
