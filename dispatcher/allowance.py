"""How many of the delivery engine's senders may be busy at once.

``SVC_DISPATCHER_CONCURRENCY`` bounds the senders; within it the allowance starts at
``FIRST_SENDERS``, grows by half at each of the engine's sweeps (every 0.1 s) while deliveries
wait and the process left CPU time unused (its senders wait for receivers), and shrinks by a
sixteenth while it used nearly all of it (``SATURATED``). Between sweeps, while the last one
found CPU time to spare, a delivery that would wait gets a sender more at once (up to half as
many again), as when senders waiting for hanging endpoints hold the whole allowance.

A busy process gains nothing from more senders: each would only lengthen the event loop's
turns and hold a connection of its own (a TLS handshake each, for real receivers). So a
backlog of wide events for prompt receivers is carried by a few connections, while slow
receivers still get every sender they need.
"""

from __future__ import annotations

import time
from collections.abc import Callable

FIRST_SENDERS = 64
"""Senders that may be busy before the process has shown it has CPU time for more."""
SATURATED = 0.85
"""The share of one CPU's time over a sweep at which the process counts as busy: more senders
would only wait for the event loop."""


def _clocks() -> tuple[float, float]:
    """The process's CPU time and the wall clock, in seconds."""
    return time.process_time(), time.monotonic()


class Pool:
    """How many senders may be busy at once: grown while deliveries wait and the process has
    CPU time to spare, shrunk while it has none, between ``FIRST_SENDERS`` (or ``size``, when
    smaller) and ``size``."""

    __slots__ = ("allowed", "floor", "size", "_ceiling", "_clocks", "_cpu", "_wall")

    def __init__(self, size: int, clocks: Callable[[], tuple[float, float]] = _clocks) -> None:
        self.size = size
        self.floor = min(size, FIRST_SENDERS)
        self.allowed = self.floor
        self._ceiling = self.floor
        """What ``more`` may raise the allowance to before the next sweep: as far as the
        next sweep would, when the last found CPU time to spare; else no further."""
        self._clocks = clocks
        self._cpu, self._wall = clocks()

    def more(self) -> bool:
        """One sender more for a delivery that would wait, while the last sweep found CPU time
        to spare (up to half as many again as it allowed): a delivery need not wait for the
        next sweep behind senders that wait for slow or hanging receivers."""
        if self.allowed < self._ceiling:
            self.allowed += 1
            return True
        return False

    def adjust(self, waiting: bool) -> int:
        """The allowance after a sweep: ``waiting`` says whether deliveries wait for a sender."""
        cpu, wall = self._clocks()
        share = (cpu - self._cpu) / max(wall - self._wall, 1e-6)
        self._cpu, self._wall = cpu, wall
        allowed = self.allowed = next_allowance(self.allowed, share, waiting, self.floor, self.size)
        spare = share < SATURATED
        self._ceiling = min(self.size, allowed + max(1, allowed // 2)) if spare else allowed
        return allowed


def next_allowance(allowed: int, share: float, waiting: bool, floor: int, size: int) -> int:
    """The senders allowed after a sweep in which the process used ``share`` of a CPU."""
    if share >= SATURATED:
        return max(floor, allowed - allowed // 16)
    if waiting:
        return min(size, allowed + max(1, allowed // 2))
    return allowed
