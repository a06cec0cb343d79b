"""How many of the fan-out's deliveries may be under way at once, whatever the events' widths.

The fan-out queue's prefetch counts events, and an event carries one delivery per subscriber:
2,000 prefetched events of an organisation with 100 endpoints are 200,000 deliveries, a task
each, far past the connections there are (``SVC_DISPATCHER_CONCURRENCY``). Waiting for a
connection, deliveries passed ``SVC_HANDOFF_AFTER`` and were handed off by the thousand, each
a publish and later a job of its own, and deliveries per second fell by a third against
events of 10 endpoints. So an event starts its deliveries only once the budget has room for
all of them (for one wider than the credits there are: once none of them is taken), in the order
the events came; each delivery gives its share back as it is settled.

A dispatcher started on a backlog begins with ``FIRST`` credits, one more for each delivery
settled, up to the whole budget: at once it would open every connection together and send
on all of them, and the first answers came back after more than a second, so most of that
first round was handed off too.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque

FIRST = 256
"""Credits at the start (the whole budget when that is smaller)."""


class Budget:
    """Credits for deliveries under way; events take theirs in arrival order."""

    def __init__(self, size: int, first: int = FIRST) -> None:
        self.size = max(1, size)
        self.limit = min(self.size, max(1, first))
        """Credits there are now: from ``first``, one more per credit given back, up to
        ``size``."""
        self.free = self.limit
        self._waiting: deque[tuple[int, asyncio.Future[None]]] = deque()

    async def take(self, count: int) -> None:
        """Wait until ``count`` credits (at most the whole budget) are free, and take
        ``count``: the budget may go below zero for an event wider than it."""
        if not self._waiting and self.free >= min(count, self.limit):
            self.free -= count
            return
        waiter = asyncio.get_running_loop().create_future()
        entry = (count, waiter)
        self._waiting.append(entry)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.give(count)  # granted as the waiter was cancelled: give it back
            else:
                with contextlib.suppress(ValueError):  # already dropped by ``_wake``
                    self._waiting.remove(entry)
                self._wake()  # those behind it may fit now
            raise

    def give(self, count: int = 1) -> None:
        """Give back credits of settled deliveries (and grow towards the whole budget)."""
        grow = min(count, self.size - self.limit)
        self.limit += grow
        self.free += count + grow
        self._wake()

    def _wake(self) -> None:
        while self._waiting:
            count, waiter = self._waiting[0]
            if waiter.done():  # cancelled: its taker is on its way out
                self._waiting.popleft()
                continue
            if self.free < min(count, self.limit):
                return
            self._waiting.popleft()
            self.free -= count
            waiter.set_result(None)
