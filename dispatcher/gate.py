"""Per-endpoint in-flight cap, so one slow endpoint cannot take every delivery slot.

A job for an endpoint below its cap goes at once. At the cap, a job waits a short while for a
slot if the endpoint is still completing requests; if it is not (nothing finished within the
wait), or no slot frees in time, the caller defers the job through a delay queue instead of
holding a prefetch slot that healthy endpoints need.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque


class _Slots:
    __slots__ = ("in_flight", "last_done", "waiters")

    def __init__(self) -> None:
        self.in_flight = 0
        self.last_done = time.monotonic()
        self.waiters: deque[asyncio.Future[None]] = deque()


class EndpointGate:
    """Counts in-flight deliveries per endpoint id."""

    def __init__(self, cap: int, wait: float) -> None:
        self._cap = cap
        self._wait = wait
        self._slots: dict[str, _Slots] = {}

    def in_flight(self, endpoint_id: str) -> int:
        slots = self._slots.get(endpoint_id)
        return 0 if slots is None else slots.in_flight

    async def acquire(self, endpoint_id: str) -> bool:
        """Take a slot; False means the endpoint is saturated and the job should be deferred."""
        slots = self._slots.get(endpoint_id)
        if slots is None:
            slots = self._slots[endpoint_id] = _Slots()
        if slots.in_flight < self._cap:
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

    def release(self, endpoint_id: str) -> None:
        """Give a slot back: to the oldest live waiter, or to the pool."""
        slots = self._slots[endpoint_id]
        slots.last_done = time.monotonic()
        while slots.waiters:
            waiter = slots.waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        slots.in_flight -= 1
        if slots.in_flight == 0:
            del self._slots[endpoint_id]
