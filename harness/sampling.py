"""Measuring processes under test: CPU of process trees over time, peak RSS, the servers' pids."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import time
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

import psutil


def tree(pid: int) -> list[psutil.Process]:
    """A process and its descendants, as far as they still exist."""
    with contextlib.suppress(psutil.NoSuchProcess):
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    return []


def servers(name: str) -> list[int]:
    """The servers here whose processes are named ``name`` (``beam.smp``, ``postgres``): each
    one's top process, whose tree holds the rest."""
    found = []
    for process in psutil.process_iter(["name", "ppid"]):
        if process.info["name"] == name:
            with contextlib.suppress(psutil.Error):
                if psutil.Process(process.info["ppid"]).name() != name:
                    found.append(process.pid)
    return found


REFRESH = 2.0
EARLY_FINDS = 8
EARLY_REFRESH = 0.2
_ME = os.getpid()


def _members(pids: list[int]) -> list[psutil.Process]:
    """The process trees of ``pids``, but of this process only itself."""
    return [p for pid in pids for p in ([psutil.Process(pid)] if pid == _ME else tree(pid))]


def _cpu_seconds(processes: list[psutil.Process]) -> float:
    """CPU so far, reaped children's included (an ended backend's, say), but not this one's."""
    total = 0.0
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            times = process.cpu_times()
            total += times.user + times.system
            if process.pid != _ME:
                total += times.children_user + times.children_system
    return total


@dataclass
class RssSampler:
    """Samples the RSS of some processes every ``interval`` seconds and keeps the peak."""

    pids: list[int]
    interval: float = 0.1
    peak: int = 0
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._sample([psutil.Process(pid) for pid in self.pids]))

    def reset(self) -> None:
        self.peak = 0

    @property
    def peak_mb(self) -> float:
        return round(self.peak / 2**20, 1)

    async def _sample(self, processes: list[psutil.Process]) -> None:
        while True:
            for process in processes:
                with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                    self.peak = max(self.peak, process.memory_info().rss)
            await asyncio.sleep(self.interval)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


class CpuTrace:
    """CPU seconds of each process group over wall time, to charge CPU to a window of receipts.
    Members are looked up (a scan of every process) every ``REFRESH`` seconds, the first few
    times sooner, so pool workers started just after their parent count in a short run."""

    def __init__(self, groups: dict[str, list[int]]) -> None:
        self._groups = groups
        self._members: dict[str, list[psutil.Process]] = {}
        self._found = -math.inf
        self._finds = 0
        self.points: list[tuple[float, dict[str, float]]] = []
        """(epoch milliseconds, CPU seconds per group), in time order."""

    def sample(self) -> None:
        if not self._groups:
            return
        now = time.monotonic()
        if now - self._found >= (REFRESH if self._finds >= EARLY_FINDS else EARLY_REFRESH):
            self._members = {name: _members(pids) for name, pids in self._groups.items()}
            self._found = now
            self._finds += 1
        usage = {name: _cpu_seconds(members) for name, members in self._members.items()}
        self.points.append((time.time() * 1000, usage))

    def between(self, start_ms: float, end_ms: float) -> dict[str, float]:
        """CPU seconds used per group from ``start_ms`` to ``end_ms`` (linear in between). A window
        with fewer than two samples is charged the samples around it instead: its share of one
        interval would read no CPU whenever the counters did not move in it."""
        points = self.points
        times = [at for at, _ in points]
        first, after = bisect_left(times, start_ms), bisect_right(times, end_ms)
        if after - first >= 2:
            return {
                name: self._at(end_ms, name) - self._at(start_ms, name) for name in self._groups
            }
        if not points:
            return dict.fromkeys(self._groups, 0.0)
        low = points[max(first - 1, 0)]
        high = points[after] if after < len(points) and points[after] is not low else points[-1]
        return {name: high[1][name] - low[1][name] for name in self._groups}

    def _at(self, at_ms: float, name: str) -> float:
        times = [at for at, _ in self.points]
        before = self.points[max(bisect_right(times, at_ms) - 1, 0)]
        after = self.points[min(bisect_left(times, at_ms), len(times) - 1)]
        if after[0] == before[0]:
            return before[1][name]
        share = (at_ms - before[0]) / (after[0] - before[0])
        return before[1][name] + share * (after[1][name] - before[1][name])
