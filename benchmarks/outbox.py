"""The outbox catch-up run: how fast one ``svc scheduler`` publishes events whose publish
was lost.

The scheduler starts first (its start-up sweep finds nothing of this run). Then ``count``
events are stored straight into the run's database, each with an outbox row older than
``SVC_OUTBOX_SWEEP_AGE``, all in one transaction, as if the publishes after their commits had
all been lost; the next sweep (``SVC_OUTBOX_SWEEP_INTERVAL``) publishes them to the events
exchange with confirms and deletes their rows. Nothing consumes the events: they wait in the
fan-out queue, whose depth afterwards shows that every one was published.

The rate is ``count`` over the time from the last poll that still saw every row to the first
that saw none (polls every ``POLL`` seconds; the CPU of each process is charged over the
same window).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from benchmarks.runs import Bench, profiled
from benchmarks.service import ServiceSystem
from harness.sampling import CpuTrace

log = logging.getLogger(__name__)

SYSTEM = "outbox"
POLL = 0.05
SAMPLE_EVERY = 5
"""Polls per CPU sample (psutil over the broker's and PostgreSQL's processes costs more)."""
AGE_MARGIN = 60.0
"""Seconds by which the outbox rows are older than the sweep age."""


async def outbox(bench: Bench, system: ServiceSystem, count: int) -> dict[str, Any]:
    """Store ``count`` stragglers at once and time one scheduler sweeping them out."""
    settings = system.settings
    await system.start()
    org = await system.organisation("outbox")
    baseline = await _rows(system)
    if baseline:
        log.warning("outbox: %d rows of other runs are in the outbox already", baseline)
    groups = {
        **system.cpu_groups(),
        "broker": bench.broker_pids(),
        "postgres": bench.postgres_pids(),
    }
    trace = CpuTrace(groups)
    patience = max(60.0, count / 100) + settings.outbox_sweep_interval
    async with profiled(system, bench.profile_dir, SYSTEM):
        await system.store_stragglers(org, count, settings.outbox_sweep_age + AGE_MARGIN)
        stored_ms = time.time() * 1000
        log.info("outbox: %d events with lost publishes stored; sweeping", count)
        polls = await _drain(system, baseline, count, patience, trace)
    full = [at for at, left in polls if left >= count]
    start_ms = full[-1] if full else stored_ms
    end_ms = next((at for at, left in polls if left == 0), None)
    remaining = polls[-1][1] if polls else count
    result: dict[str, Any] = {
        "system": SYSTEM,
        "label": system.label,
        "processes": system.roles(),
        "events": count,
        "remaining": remaining,
        "published": await system.queued("fanout"),
        "sweep_age_s": settings.outbox_sweep_age,
        "sweep_interval_s": settings.outbox_sweep_interval,
        "rate_per_s": None,
        "duration_s": None,
        "sweep_started_after_s": round((start_ms - stored_ms) / 1000, 3),
    }
    if end_ms is not None and end_ms > start_ms:
        result["duration_s"] = round((end_ms - start_ms) / 1000, 3)
        result["rate_per_s"] = round(count / (end_ms - start_ms) * 1000, 1)
        for group, seconds in trace.between(start_ms, end_ms).items():
            result[f"cpu_us_per_event_{group}"] = round(seconds * 1e6 / count)
    result["counters"] = await system.counters()
    return result


async def _rows(system: ServiceSystem) -> int:
    return int(await system.ctx.db.fetchval("SELECT count(*) FROM outbox"))


async def _drain(
    system: ServiceSystem, baseline: int, count: int, patience: float, trace: CpuTrace
) -> list[tuple[float, int]]:
    """Poll the outbox until this run's rows are gone (or ``patience`` ran out): the time
    in unix milliseconds and the rows left at each poll."""
    polls: list[tuple[float, int]] = []
    deadline = time.monotonic() + patience
    while True:
        if len(polls) % SAMPLE_EVERY == 0:
            trace.sample()
        left = max(0, await _rows(system) - baseline)
        polls.append((time.time() * 1000, left))
        if left == 0:
            trace.sample()
            return polls
        if time.monotonic() > deadline:
            log.warning("outbox: %d of %d rows left after %.0f s", left, count, patience)
            return polls
        await asyncio.sleep(POLL)
