"""Measuring processes under test: CPU of process trees over time, peak RSS, the servers' pids."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import psutil


def tree(pid: int) -> list[psutil.Process]:
    """A process and its descendants (pool workers), as far as they still exist."""
    with contextlib.suppress(psutil.NoSuchProcess):
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    return []


def broker_pids(url: str | None = None) -> list[int]:
    """The RabbitMQ VM at ``url`` (the one listening on its port here), else every one on this
    machine; shared with anything else using the broker: read as an upper bound."""
    found = _listener(url, 5672) if url else None
    if found is not None:
        return [found]
    return [p.pid for p in psutil.process_iter(["name"]) if p.info["name"] == "beam.smp"]


def postgres_pids(url: str | None = None) -> list[int]:
    """The PostgreSQL server at ``url`` (its postmaster, listening on its port here; backends
    are its children), else every one on this machine: shared with any other user of the
    server, so read as an upper bound. Other servers (tests start private ones) are left out
    where the URL tells which: one that stops would take its CPU with it."""
    found = _listener(url, 5432) if url else None
    if found is not None:
        return [found]
    found_all = []
    for process in psutil.process_iter(["name", "ppid"]):
        if process.info["name"] not in ("postgres", "postmaster"):
            continue
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            parent = psutil.Process(process.info["ppid"])
            if parent.name() not in ("postgres", "postmaster"):
                found_all.append(process.pid)
    return found_all


def _listener(url: str, default_port: int) -> int | None:
    """The process listening on the TCP port of ``url`` on this machine, if it is here."""
    port = urlsplit(url).port or default_port
    with contextlib.suppress(psutil.AccessDenied, OSError):
        for conn in psutil.net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
                if conn.pid:
                    return conn.pid
    return None


EARLY_FINDS = 8
EARLY_REFRESH = 0.2


class TreeCpu:
    """CPU seconds so far of the process trees of some pids, including children that ended
    and were reaped (a PostgreSQL backend that closes would otherwise take its CPU with it
    and make the total shrink). For this process (the harness publishing) only its own CPU
    counts: its children, alive or reaped, are the processes under test, counted on their own.

    Finding a tree's members scans every process of the machine, so members are looked up
    again only every ``refresh`` seconds; reading their CPU in between is cheap. A member
    that starts in between is counted from the next look-up on, with all its CPU so far.
    The first few look-ups come quickly, since pool workers (Dramatiq, Celery prefork) start
    just after their parent and a short run could otherwise be over before they are seen."""

    def __init__(self, pids: Sequence[int], refresh: float = 2.0) -> None:
        self._pids = list(pids)
        self._refresh = refresh
        self._members: list[psutil.Process] = []
        self._found = -math.inf
        self._finds = 0

    def seconds(self) -> float:
        now = time.monotonic()
        refresh = self._refresh if self._finds >= EARLY_FINDS else EARLY_REFRESH
        if now - self._found >= refresh:
            self._members = self._find()
            self._found = now
            self._finds += 1
        total = 0.0
        for process in self._members:
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                times = process.cpu_times()
                total += times.user + times.system
                if process.pid != _ME:
                    total += times.children_user + times.children_system
        return total

    def _find(self) -> list[psutil.Process]:
        found: list[psutil.Process] = []
        for pid in self._pids:
            if pid == _ME:
                found.append(psutil.Process(pid))
            else:
                found.extend(tree(pid))
        return found


_ME = os.getpid()


@dataclass
class RssSampler:
    """Samples the RSS of some processes every ``interval`` seconds and keeps each one's peak."""

    pids: list[int]
    interval: float = 0.1
    peaks: dict[int, int] = field(default_factory=dict)
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        handles = {pid: psutil.Process(pid) for pid in self.pids}
        self._sample_once(handles)  # a backlog may drain before the first tick
        self._task = asyncio.create_task(self._sample(handles))

    def reset(self) -> None:
        self.peaks.clear()

    @property
    def peak_mb(self) -> float:
        return round(max(self.peaks.values(), default=0) / 2**20, 1)

    def _sample_once(self, handles: dict[int, psutil.Process]) -> None:
        for pid, process in handles.items():
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                rss = process.memory_info().rss
                self.peaks[pid] = max(self.peaks.get(pid, 0), rss)

    async def _sample(self, handles: dict[int, psutil.Process]) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self._sample_once(handles)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


class CpuTrace:
    """CPU seconds of each process group over wall time, to charge CPU to a window of receipts."""

    def __init__(self, groups: dict[str, list[int]]) -> None:
        self._groups = {name: TreeCpu(pids) for name, pids in groups.items()}
        self.points: list[tuple[float, dict[str, float]]] = []

    def sample(self) -> None:
        if self._groups:
            usage = {name: group.seconds() for name, group in self._groups.items()}
            self.points.append((time.time() * 1000, usage))

    def spent(self) -> dict[str, float]:
        """CPU seconds used per group from the first sample to the last."""
        first, last = self.points[0][1], self.points[-1][1]
        return {name: last[name] - first[name] for name in self._groups}

    def between(self, start_ms: float, end_ms: float) -> dict[str, float]:
        """CPU seconds used per group from ``start_ms`` to ``end_ms`` (linear in between).

        A window that spans no sample (a tiny run, all of it between two samples or before
        the first) is charged the samples around it instead: a window's share of one
        interval would read no CPU at all whenever the counters did not move within it.
        """
        points = self.points
        if sum(1 for p in points if start_ms <= p[0] <= end_ms) >= 2:
            return {
                name: self._at(end_ms, name) - self._at(start_ms, name) for name in self._groups
            }
        earlier = [p for p in points if p[0] < start_ms]
        later = [p for p in points if p[0] > end_ms]
        low = earlier[-1] if earlier else points[0] if points else None
        high = later[0] if later else points[-1] if points else None
        if low is not None and high is low:
            high = points[-1]
        if low is None or high is None:
            return {name: 0.0 for name in self._groups}
        return {name: high[1][name] - low[1][name] for name in self._groups}

    def _at(self, at_ms: float, name: str) -> float:
        points = self.points
        if not points:
            return 0.0
        before = max((p for p in points if p[0] <= at_ms), default=points[0], key=lambda p: p[0])
        after = min((p for p in points if p[0] >= at_ms), default=points[-1], key=lambda p: p[0])
        if after[0] == before[0]:
            return before[1][name]
        share = (at_ms - before[0]) / (after[0] - before[0])
        return before[1][name] + share * (after[1][name] - before[1][name])
