"""Per-endpoint in-flight limits, so one slow endpoint cannot take every delivery slot.

Each endpoint gets a window of concurrent deliveries that starts at ``INITIAL_WINDOW``, grows
by one with every answered request up to ``SVC_ENDPOINT_CONCURRENCY`` and halves, down to
``MIN_WINDOW``, with every request that got no answer (time-out, refused connection): a
healthy endpoint quickly gets the full cap, and a hanging one, once its first requests have
timed out, holds only a handful of slots whose requests do not all time out together. A job
for an endpoint at its window waits a short while for a slot if the endpoint is still
completing requests; if it is not (nothing finished within the wait), or no slot frees in
time, the caller defers the job through a delay queue instead of holding a prefetch slot
that healthy endpoints need.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

INITIAL_WINDOW = 32
"""An endpoint not yet heard from (or idle since) may have this many deliveries in flight:
enough that a backlog for endpoints answering in 200 ms does not defer jobs while the window
grows by one per answer, few enough that only this many of a hanging endpoint's requests
time out before its window halves."""
MIN_WINDOW = 8
"""Unanswered requests halve a window down to this."""


class _Slots:
    __slots__ = ("in_flight", "last_done", "waiters", "window")

    def __init__(self, window: int) -> None:
        self.in_flight = 0
        self.window = window
        self.last_done = time.monotonic()
        self.waiters: deque[asyncio.Future[None]] = deque()


class EndpointGate:
    """Counts in-flight deliveries per endpoint id."""

    def __init__(self, cap: int, wait: float) -> None:
        self._cap = cap
        self._initial = min(cap, INITIAL_WINDOW)
        self._floor = min(cap, MIN_WINDOW)
        self._wait = wait
        self._slots: dict[str, _Slots] = {}

    def in_flight(self, endpoint_id: str) -> int:
        slots = self._slots.get(endpoint_id)
        return 0 if slots is None else slots.in_flight

    def window(self, endpoint_id: str) -> int:
        slots = self._slots.get(endpoint_id)
        return self._initial if slots is None else slots.window

    async def acquire(self, endpoint_id: str) -> bool:
        """Take a slot; False means the endpoint is saturated and the job should be deferred."""
        slots = self._slots.get(endpoint_id)
        if slots is None:
            slots = self._slots[endpoint_id] = _Slots(self._initial)
        if slots.in_flight < slots.window:
            slots.in_flight += 1
            return True
        if time.monotonic() - slots.last_done > self._wait:
            return False
        waiter = asyncio.get_running_loop().create_future()
        slots.waiters.append(waiter)
        try:
            async with asyncio.timeout(self._wait):
                await waiter
        except TimeoutError:
            # A slot handed over just as the wait ran out is ours all the same.
            return waiter.done() and not waiter.cancelled()
        return True

    def release(self, endpoint_id: str, answered: bool | None) -> None:
        """Give a slot back; ``answered`` says whether the endpoint responded at all (None:
        nothing was sent, and the window stays as it is)."""
        slots = self._slots[endpoint_id]
        slots.last_done = time.monotonic()
        slots.in_flight -= 1
        if answered:
            slots.window = min(self._cap, slots.window + 1)
        elif answered is not None:
            slots.window = max(self._floor, slots.window // 2)
        while slots.waiters and slots.in_flight < slots.window:
            waiter = slots.waiters.popleft()
            if not waiter.done():
                slots.in_flight += 1
                waiter.set_result(None)
        if slots.in_flight == 0 and not slots.waiters:
            del self._slots[endpoint_id]
