"""The turn-taking run: backlogs of several systems drained at once, each alone on the
machine for a short turn while the others are held, so that a drift in the machine's speed
falls on all of them alike (the tracing section's comparison)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import math
import os
import signal
import time
from collections.abc import Sequence
from typing import Any

from benchmarks.runs import Bench, backlog_row, patience_for, settled_row
from benchmarks.service import ServiceSystem

log = logging.getLogger(__name__)


async def in_turns(
    bench: Bench, systems: Sequence[ServiceSystem], count: int, turn: float
) -> list[dict[str, Any]]:
    """Backlogs of ``count`` for each system, drained in turns: the events are stored, each
    system's workers started and stopped (SIGSTOP) as soon as they are ready, the events
    published to them, and then each system in turn runs alone for ``turn`` seconds
    (SIGCONT, then SIGSTOP), round and round, until one system has delivered its whole
    backlog; then all run on to the end. A system's rate is its deliveries over the time it
    ran, both counted from the first turn to the end of the last, so a change in the
    machine's speed that outlasts a few turns slows every system alike.

    Deliveries a system had in flight when its turn ended are answered and logged in the
    next system's turn: each system's work still counts as its own."""
    runs = [f"{system.name}-tp" for system in systems]
    targets = [bench.targets(run) for run in runs]
    created: list[dict[str, int]] = []
    for system, aimed in zip(systems, targets, strict=True):
        created.append(await system.store_backlog(aimed, count))
    workers = await _held(systems)
    log.info("%s: %d events each published to held workers", ", ".join(runs), count)
    ran: list[float] = [0.0] * len(systems)
    window: list[float] = []

    def done() -> bool:
        return any(
            bench.log.all_arrived(run, ids.keys()) for run, ids in zip(runs, created, strict=True)
        )

    async def take_turns() -> None:
        window.append(time.time() * 1000)
        try:
            for number in itertools.count():
                if done():
                    break
                which = number % len(systems)
                began = time.monotonic()
                _signal([workers[which]], signal.SIGCONT)
                await asyncio.sleep(turn)
                _signal([workers[which]], signal.SIGSTOP)
                ran[which] += time.monotonic() - began
        finally:
            window.append(time.time() * 1000)
            _signal(workers, signal.SIGCONT)

    timeout = patience_for(count * len(systems), 60)
    turns = asyncio.create_task(take_turns())
    try:
        drained = await asyncio.gather(
            *(
                bench.wait(run, set(ids), timeout, system)
                for system, run, ids in zip(systems, runs, created, strict=True)
            )
        )
    finally:
        turns.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await turns
    start, end = window
    rows = []
    for system, run, aimed, (arrived, trace), seconds in zip(
        systems, runs, targets, drained, ran, strict=True
    ):
        within = sum(1 for r in arrived.values() if start <= r.at_ms <= end)
        row = {
            **backlog_row(bench, system, run, count, arrived),
            "input": system.input,
            "rate_per_s": round(within / seconds, 1) if seconds > 0 else math.nan,
            "duration_s": round(seconds, 3),
            "delivered_in_turns": within,
        }
        if within:
            for group, used in trace.between(start, end).items():
                if group in system.cpu_groups():  # the shared servers serve every system
                    row[f"cpu_us_per_delivery_{group}"] = round(used * 1e6 / within)
        rows.append(await settled_row(system, aimed, arrived, row))
    return rows


async def _held(systems: Sequence[ServiceSystem]) -> list[list[int]]:
    """Start each system's workers with nothing to do and stop each as soon as it is ready;
    then publish the stored backlogs to them, so none starts ahead. Each system's pids."""
    workers: list[list[int]] = []
    try:
        for system in systems:
            await system.spawn()
            await system.ready()
            workers.append([pid for pids in system.cpu_groups().values() for pid in pids])
            _signal(workers[-1:], signal.SIGSTOP)
            system.reset_rss()
        for system in systems:
            await system.send_backlog()
    except BaseException:
        _signal(workers, signal.SIGCONT)  # a held process would not see the SIGTERM that stops it
        raise
    return workers


def _signal(groups: Sequence[Sequence[int]], sig: int) -> None:
    for pids in groups:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
