"""How many of the fan-out's deliveries may be under way at once, whatever the events' widths.

The fan-out queue's prefetch counts events, and an event carries one delivery per subscriber:
2,000 prefetched events of an organisation with 100 endpoints are 200,000 deliveries, a task
each, far past the connections there are (``SVC_DISPATCHER_CONCURRENCY``). Waiting for a
connection, deliveries passed ``SVC_HANDOFF_AFTER`` and were handed off by the thousand, each
a publish and later a job of its own, and deliveries per second fell by a third against
events of 10 endpoints. So each delivery takes a credit of the budget before it starts, and
gives it back as it is settled.

Events take their credits one event at a time, in the order they came (``turn``), and one
delivery at a time (``one``): each delivery starts as soon as its credit is free, so an event
wider than the credits free starts what it can and the rest follow, one per credit given
back. An event that waited for room for all of its deliveries started them together, they
ended together, and the dispatcher and the receivers took turns being idle: 100-endpoint
events ran at 0.84 of 10-endpoint ones; one delivery per credit runs them at the same rate.
Only the event holding the turn waits for credits, so no more deliveries wait than one
event has.

A dispatcher started on a backlog begins with ``FIRST`` credits, one more for each delivery
settled, up to the whole budget: at once it would open every connection together and send
on all of them, and the first answers came back after more than a second, so most of that
first round was handed off too.
"""

from __future__ import annotations

import asyncio

FIRST = 256
"""Credits at the start (the whole budget when that is smaller)."""


class Budget:
    """Credits for deliveries under way, taken one delivery at a time by one event at a time."""

    def __init__(self, size: int, first: int = FIRST) -> None:
        self.size = max(1, size)
        self.limit = min(self.size, max(1, first))
        """Credits there are now: from ``first``, one more per credit given back, up to
        ``size``."""
        self.free = self.limit
        self._turn = asyncio.Lock()
        self._freed: asyncio.Future[None] | None = None

    def turn(self) -> asyncio.Lock:
        """Held by the event taking its deliveries' credits; events get it in arrival order."""
        return self._turn

    async def one(self) -> None:
        """Take one credit, waiting until one is given back when none is free (only the
        holder of ``turn`` takes credits, so there is one waiter at most)."""
        while self.free < 1:
            self._freed = asyncio.get_running_loop().create_future()
            try:
                await self._freed
            finally:
                self._freed = None
        self.free -= 1

    def give(self, count: int = 1) -> None:
        """Give back credits of settled deliveries (and grow towards the whole budget)."""
        grow = min(count, self.size - self.limit)
        self.limit += grow
        self.free += count + grow
        if self._freed is not None and not self._freed.done():
            self._freed.set_result(None)
