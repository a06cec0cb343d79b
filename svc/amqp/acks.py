"""Coalesced acks: a run of finished messages is settled by one ``basic.ack(multiple)``.

A multiple-ack of tag T settles every unsettled message of the channel up to T, so it may
only cover messages that are finished: ``Acks`` keeps the channel's open delivery tags in
arrival order and acks the finished prefix. A message that must go back to its queue is
rejected while its tag still blocks the prefix, so no multiple-ack can pass over it first.
Finished messages waiting behind a long-running one (a delivery to a slow endpoint) hold
prefetch slots, so past ``hold_limit`` of them they are acked one by one instead.

Acks reach the broker in the order they were decided, through one sender: concurrent
writers can overtake each other in the connection's write queue, and a multiple-ack for T
overtaken by the one for T+1 would name a tag the broker no longer knows, which closes the
channel. Messages of a channel that closed are not acked at all: the broker has put them
back already.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque

from svc.amqp.received import Received

log = logging.getLogger(__name__)

ACK_GATHER = 0.02
"""Seconds a finished message waits for others to share its ack. Deliveries to slow
receivers finish a few at a time, and acking each trickle on its own makes the broker send
the next messages a few at a time too, one socket read each; gathered acks let it refill the
prefetch in bigger reads, which saves it about a quarter of its CPU per delivery when
receivers answer in 200 ms. It delays only acks: at 5,000 deliveries/s, 20 ms hold some 100
more prefetch slots."""

REQUEUE_AFTER = 1.0
"""Seconds a message that failed waits before it goes back to its queue: a broken dependency
must not spin the CPU."""


class Acks:
    """Settles the messages of one consumer."""

    def __init__(self, hold_limit: int, gather: float = 0.0) -> None:
        self._hold_limit = hold_limit
        self._gather = gather
        self._channel: object = None
        # Delivery tag → the message once finished (None while its handler runs), in tag order.
        self._open: dict[int, Received | None] = {}
        self._held = 0
        self._flush_pending = False
        self._outbox: deque[tuple[Received, bool]] = deque()
        self._sender: asyncio.Task[None] | None = None
        self._failing: set[asyncio.Task[None]] = set()

    @classmethod
    def for_prefetch(cls, prefetch: int) -> Acks:
        """Acks of a consumer with this prefetch: a quarter of it may wait behind a slow one,
        and messages finished within ``ACK_GATHER`` share one ack."""
        return cls(hold_limit=max(1, prefetch // 4), gather=ACK_GATHER)

    def received(self, message: Received) -> None:
        """A handler starts on ``message`` (handlers start in delivery order)."""
        if message.channel.is_closed:
            return
        if message.channel is not self._channel:
            # A reopened channel numbers its deliveries anew; the old ones were requeued.
            self._channel = message.channel
            self._open.clear()
            self._held = 0
        self._open[message.delivery_tag] = None

    def finished(self, message: Received) -> None:
        """``message`` is done with: ack it, with its neighbours, once ``gather`` has passed.

        A handler may settle its message before it returns (a fan-out whose slow deliveries
        were handed off); the second call, when it returns, changes nothing.
        """
        if not self._running(message):
            return  # settled already, or its channel closed and the broker has put it back
        self._open[message.delivery_tag] = message
        self._held += 1
        if not self._flush_pending:
            self._flush_pending = True
            asyncio.get_running_loop().call_later(self._gather, self._flush)

    def fail(self, message: Received, after: float = REQUEUE_AFTER) -> None:
        """A message handed on could not be done with: give it back to its queue ``after``
        seconds from now (so a broken dependency does not spin the CPU)."""
        if not self._running(message):
            return
        task = asyncio.get_running_loop().create_task(self._requeue_after(message, after))
        self._failing.add(task)
        task.add_done_callback(self._failing.discard)

    async def _requeue_after(self, message: Received, after: float) -> None:
        await asyncio.sleep(after)
        await self.requeue(message)

    def unfinished(self) -> int:
        """Messages of the channel neither finished nor given back yet."""
        return sum(1 for message in self._open.values() if message is None)

    async def handed_back(self, within: float) -> None:
        """Wait until every message of the channel is finished or given back, for at most
        ``within`` seconds (at stop, for the messages handed on)."""
        deadline = asyncio.get_running_loop().time() + within
        while any(m is None for m in self._open.values()) or self._failing:
            if asyncio.get_running_loop().time() >= deadline:
                return
            await asyncio.sleep(0.05)

    async def requeue(self, message: Received) -> None:
        """Give ``message`` back to its queue; only then may acks pass over its tag.

        A message settled already stays settled: rejecting an acked tag would close the channel.
        """
        if not self._running(message):
            return  # settled already, or the broker put it back when the channel closed
        try:
            await message.reject(requeue=True)
        except Exception as exc:  # the channel closed: the broker requeues it by itself
            log.warning("reject not sent: %s", exc)
        finally:
            if not message.channel.is_closed and message.channel is self._channel:
                self._open.pop(message.delivery_tag, None)

    def _running(self, message: Received) -> bool:
        """``message`` is open on the current channel and not yet finished."""
        if message.channel.is_closed or message.channel is not self._channel:
            return False
        return message.delivery_tag in self._open and self._open[message.delivery_tag] is None

    async def settle(self) -> None:
        """Ack everything finished now and wait until the broker has been told."""
        self._flush(everything=True)
        if self._sender is not None:
            await asyncio.wait({self._sender})

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
            self._send(message, multiple=True)
        if self._held > self._hold_limit or (everything and self._held):
            for tag, message in list(self._open.items()):
                if message is not None:
                    del self._open[tag]
                    self._send(message, multiple=False)
            self._held = 0

    def _send(self, message: Received, multiple: bool) -> None:
        self._outbox.append((message, multiple))
        if self._sender is None:
            self._sender = asyncio.create_task(self._send_in_order())

    async def _send_in_order(self) -> None:
        try:
            while self._outbox:
                message, multiple = self._outbox.popleft()
                try:
                    await message.ack(multiple=multiple)
                except Exception as exc:  # the channel closed: the broker requeues them itself
                    log.warning("ack not sent: %s", exc)
        finally:
            self._sender = None
