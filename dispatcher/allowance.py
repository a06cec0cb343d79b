"""How many of the delivery engine's senders may be busy at once.

``SVC_DISPATCHER_CONCURRENCY`` bounds the senders; within it the allowance starts at
``FIRST_SENDERS`` and is adjusted at each of the engine's sweeps (every 0.1 s):

- while the process left CPU time unused (its senders wait for receivers) and deliveries
  wait, it grows by half; the time its deliveries then took from send to answer is what the
  receivers take (``Pool.unqueued``), nothing having waited for the event loop. A single such
  sweep after a busy one grows it by a sixteenth only: a moment's lull in a busy process is
  no room for half as many senders again;
- while the process used nearly all of it (``SATURATED``), it shrinks by a sixteenth, unless
  deliveries wait for a sender while each sender waits only for its receiver (answers no
  slower than ``QUEUED`` times what the receivers take): then the senders are what the
  receivers' answer time needs, and it keeps them.

Between sweeps, while the last one found CPU time to spare, a delivery that would wait gets a
sender more at once (up to as many as the next sweep would add), as when senders waiting for
hanging endpoints hold the whole allowance.

Senders past what the process can serve cost more than they bring: each holds a connection
of its own (a TLS handshake each, for real receivers), and a delivery whose answer waits for
the event loop keeps its request, response and job alive meanwhile, so every delivery costs
more CPU. So a backlog of wide events for prompt receivers is carried by a few connections,
and receivers that answer in 200 ms get the senders their answer time needs, with the
deliveries beyond them waiting in the engine's queue rather than in the event loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable

FIRST_SENDERS = 64
"""Senders that may be busy before the process has shown it has CPU time for more."""
SATURATED = 0.85
"""The share of one CPU's time over a sweep at which the process counts as busy: more senders
would only wait for the event loop."""
QUEUED = 1.25
"""How much longer than its receivers take (``Pool.unqueued``) a busy process's deliveries may
take from send to answer before senders are given back."""


def _clocks() -> tuple[float, float]:
    """The process's CPU time and the wall clock, in seconds."""
    return time.process_time(), time.monotonic()


class Pool:
    """How many senders may be busy at once: grown while deliveries wait and the process has
    CPU time to spare, shrunk while it has none (unless the senders are what its receivers'
    answer time needs), between ``FIRST_SENDERS`` (or ``size``, when smaller) and ``size``."""

    __slots__ = (
        "allowed",
        "floor",
        "size",
        "unqueued",
        "_calm",
        "_ceiling",
        "_clocks",
        "_cpu",
        "_wall",
    )

    def __init__(self, size: int, clocks: Callable[[], tuple[float, float]] = _clocks) -> None:
        self.size = size
        self.floor = min(size, FIRST_SENDERS)
        self.allowed = self.floor
        self.unqueued: float | None = None
        """Seconds from send to answer in the last sweep with CPU time to spare (None: none
        yet): what the receivers take, with nothing waiting for the event loop."""
        self._calm = 1
        """Sweeps in a row that found CPU time to spare (from 1: none has found it short)."""
        self._ceiling = self.floor
        """What ``more`` may raise the allowance to before the next sweep: as far as the
        next sweep would, when the last found CPU time to spare; else no further."""
        self._clocks = clocks
        self._cpu, self._wall = clocks()

    def more(self) -> bool:
        """One sender more for a delivery that would wait, while the last sweep found CPU time
        to spare (up to as many as the next sweep would add): a delivery need not wait for
        the next sweep behind senders that wait for slow or hanging receivers."""
        if self.allowed < self._ceiling:
            self.allowed += 1
            return True
        return False

    def adjust(self, waiting: bool, answered: float | None = None) -> int:
        """The allowance after a sweep: ``waiting`` says whether deliveries wait for a sender,
        ``answered`` the median seconds from send to answer of the sweep's deliveries (None
        when none was answered)."""
        cpu, wall = self._clocks()
        share = (cpu - self._cpu) / max(wall - self._wall, 1e-6)
        self._cpu, self._wall = cpu, wall
        spare = share < SATURATED
        if spare and answered is not None:
            self.unqueued = answered
        # Every sender at work, with deliveries waiting for one, and each answer as prompt as
        # the receivers make it: the senders are what bounds the deliveries, and none is idle.
        bound = (
            waiting
            and answered is not None
            and self.unqueued is not None
            and answered <= self.unqueued * QUEUED
        )
        self._calm = self._calm + 1 if spare else 0
        allowed = self.allowed = next_allowance(
            self.allowed, share, waiting, self.floor, self.size, bound, self._calm
        )
        self._ceiling = min(self.size, allowed + _step(allowed, self._calm)) if spare else allowed
        return allowed


def _step(allowed: int, calm: int) -> int:
    """Senders more at a sweep with CPU time to spare: half as many again, but a sixteenth
    after one that had none (a moment's lull in a busy process is no room for half again)."""
    return max(1, allowed // 2 if calm > 1 else allowed // 16)


def next_allowance(
    allowed: int,
    share: float,
    waiting: bool,
    floor: int,
    size: int,
    bound: bool = False,
    calm: int = 2,
) -> int:
    """The senders allowed after a sweep in which the process used ``share`` of a CPU;
    ``bound``: deliveries waited for a sender while each sender waited only for its receiver;
    ``calm``: sweeps in a row, this one included, with CPU time to spare."""
    if share >= SATURATED:
        return allowed if bound else max(floor, allowed - allowed // 16)
    if waiting:
        return min(size, allowed + _step(allowed, calm))
    return allowed
