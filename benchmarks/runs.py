"""The kinds of run: backlog throughput, end to end, paced latency, isolation and retry storm.

Each run publishes to URLs under its own first path segment, so the receiver's log tells the
runs apart. Deliveries count when the receiver logged a signed 2xx for the event id.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from benchmarks.naive import new_target
from benchmarks.receipts import AccessLog, Receipt, lag_summary, percentile, rate_summary
from benchmarks.service import ServiceSystem
from benchmarks.workload import System, Target
from harness.nginx import BlackHole, Receiver
from harness.sampling import CpuTrace, broker_pids, postgres_pids

log = logging.getLogger(__name__)

WARM_UP = 20
SAMPLE_EVERY = 1.0
"""Seconds between two samples of the dispatchers' in-flight gauge in a slow-receiver run:
each is a scrape of ``/metrics`` on the dispatcher's own event loop, which at every 0.25 s
cost it about 1 % of its CPU, a cost only that run bore."""


@dataclass
class Bench:
    """What every run shares: the receivers and the log they write."""

    receiver: Receiver
    hole: BlackHole
    endpoints: int
    profile_dir: Path | None = None
    amqp_url: str | None = None
    database_url: str | None = None
    """The broker and database of the run, whose server processes CPU is charged to."""
    log: AccessLog = field(init=False)

    def __post_init__(self) -> None:
        self.log = AccessLog(*self.receiver.log_paths)

    def broker_pids(self) -> list[int]:
        return broker_pids(self.amqp_url)

    def postgres_pids(self) -> list[int]:
        return postgres_pids(self.database_url)

    def targets(self, run: str, hanging: int = 0, slow: bool = False) -> list[Target]:
        """``endpoints`` targets of ``run``; the last ``hanging`` of them never answer; with
        ``slow`` every one is a slow endpoint of the receiver."""
        healthy = self.endpoints - hanging
        url = self.receiver.slow_url if slow else self.receiver.url
        return [
            new_target(url(f"/{run}/e{i}") if i < healthy else self.hole.url(f"/{run}/e{i}"))
            for i in range(self.endpoints)
        ]

    async def wait(
        self,
        run: str,
        expected: set[str],
        patience: float,
        system: System | None = None,
        producer: bool = False,
        ready: Callable[[], Awaitable[None]] | None = None,
    ) -> tuple[dict[str, Receipt], CpuTrace]:
        """Wait until every expected id arrived (or ``patience`` ran out); sample CPU meanwhile
        (with ``producer``, this process's too: it publishes during the wait). With ``ready``,
        the workers were only spawned: the first sample is taken before waiting for them, so
        work a quick worker does while a slower one starts is charged too."""
        groups = {}
        if system is not None:
            groups = {**system.cpu_groups(), "broker": self.broker_pids()}
            if system.uses_database:
                groups["postgres"] = self.postgres_pids()
            groups["nginx"] = self.receiver.pids
            if producer:
                groups["producer"] = [os.getpid()]
        trace = CpuTrace(groups)
        if ready is not None:
            trace.sample()
            await ready()
        deadline = time.monotonic() + patience
        while True:
            trace.sample()
            self.log.poll()
            if self.log.all_arrived(run, expected):
                break
            if time.monotonic() > deadline:
                log.warning(
                    "%s: %d of %d events arrived within %.0f s",
                    run,
                    len(expected & self.log.first_ok.get(run, {}).keys()),
                    len(expected),
                    patience,
                )
                break
            await asyncio.sleep(0.25)
        # Receipts read in the last poll came after the sample before it: one more sample
        # brackets every receipt, so a short run is never measured as taking no CPU.
        trace.sample()
        arrived = self.log.first_ok.get(run, {})
        return {i: arrived[i] for i in expected if i in arrived}, trace


@contextlib.asynccontextmanager
async def profiled(system: System, into: Path | None, run: str) -> AsyncIterator[None]:
    """Sample the system's processes with py-spy (collapsed stacks) while the block runs."""
    spy = shutil.which("py-spy", path=str(Path(sys.executable).parent))
    if into is None or spy is None:
        yield
        return
    spies = _start_spies(spy, system, into, run)
    try:
        yield
    finally:
        for process in spies:
            process.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
        for process in spies:
            await asyncio.to_thread(process.wait)


def _start_spies(spy: str, system: System, into: Path, run: str) -> list[subprocess.Popen[bytes]]:
    into.mkdir(parents=True, exist_ok=True)
    return [
        subprocess.Popen(
            [
                spy,
                "record",
                "--pid",
                str(pid),
                "--rate",
                "200",
                "--nonblocking",
                "--format",
                "raw",
                "--output",
                str(into / f"{run}-{group}-{pid}.txt"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for group, pids in system.cpu_groups().items()
        for pid in pids
    ]


def patience_for(count: int, floor: float) -> float:
    return max(floor, count / 100)


async def warm_up(bench: Bench, system: System, run: str) -> None:
    """Send a few events first so workers are up and connections open before measuring."""
    created = await system.publish(bench.targets(run), WARM_UP, 0)
    arrived, _ = await bench.wait(run, set(created), 60)
    if len(arrived) < len(created):
        raise RuntimeError(f"{system.name}: warm-up deliveries did not arrive")


async def throughput(
    bench: Bench, system: System, count: int, slow: bool = False
) -> dict[str, Any]:
    """Publish a backlog with the workers stopped, start them, measure the drain rate. With
    ``slow`` every endpoint answers after the receiver's slow delay."""
    run = f"{system.name}-tp"
    targets = bench.targets(run, slow=slow)
    created = await system.publish(targets, count, 0)
    system.reset_rss()
    log.info("%s: %d events published; starting workers", run, count)
    await system.spawn()
    in_flight: list[float] = []
    async with profiled(system, bench.profile_dir, run), _watching(system, slow, in_flight):
        timeout = patience_for(count, 60)
        arrived, trace = await bench.wait(run, set(created), timeout, system, ready=system.ready)
    receipts = list(arrived.values())
    result: dict[str, Any] = {
        **backlog_row(bench, system, run, count, arrived),
        "input": system.input,
        **rate_summary(receipts),
    }
    if len(receipts) > 1:
        first, last = min(r.at_ms for r in receipts), max(r.at_ms for r in receipts)
        for group, seconds in trace.between(first, last).items():
            result[f"cpu_us_per_delivery_{group}"] = round(seconds * 1e6 / (len(receipts) - 1))
    if slow and isinstance(system, ServiceSystem):
        result.update(_capacity(bench, system, arrived, in_flight))
    return await settled_row(system, targets, arrived, result)


def backlog_row(
    bench: Bench, system: System, run: str, count: int, arrived: dict[str, Receipt]
) -> dict[str, Any]:
    """What every backlog row starts with: who, how many, and what arrived how often."""
    row: dict[str, Any] = {"system": system.name, "label": system.label}
    if system.roles():
        row["processes"] = system.roles()  # which roles ran (no scheduler: off the path)
    return {
        **row,
        "events": count,
        "delivered": len(arrived),
        **_duplicates(bench.log.runs[run], arrived),
    }


async def settled_row(
    system: System, targets: list[Target], arrived: dict[str, Receipt], result: dict[str, Any]
) -> dict[str, Any]:
    """``result`` with peak RSS, the system's counters and its delivery log once settled."""
    result["peak_rss_mb"] = system.peak_rss_mb()
    result["counters"] = await settled_counters(system, len(arrived))
    logged = await system.attempts_logged(targets, len(arrived))
    if logged is not None:  # every attempt is in PostgreSQL, not only at the receiver
        result["attempts_logged"] = logged
    return result


def _capacity(
    bench: Bench, system: ServiceSystem, arrived: dict[str, Receipt], in_flight: list[float]
) -> dict[str, Any]:
    """The in-flight settings a slow run used, the rate they allow, and what was in flight."""
    settings = system.settings
    delay = bench.receiver.slow_delay or 0.0
    took = [r.took_ms for r in arrived.values()]
    per_process = min(
        settings.dispatcher_concurrency, bench.endpoints * settings.endpoint_concurrency
    )
    cap = per_process * system.dispatchers
    busy = [n for n in in_flight if n > 0]
    return {
        "receiver_delay_ms": round(delay * 1000),
        "receiver": bench.receiver.slow_kind,
        "dispatcher_concurrency": settings.dispatcher_concurrency,
        "endpoint_concurrency": settings.endpoint_concurrency,
        "endpoints": bench.endpoints,
        "in_flight_cap": cap,
        "rate_cap_per_s": round(cap / delay) if delay else None,
        "in_flight_peak": max(in_flight, default=0.0),
        "in_flight_median": percentile(busy, 50) if busy else 0.0,
        "in_flight_sample_s": SAMPLE_EVERY,
        # What the receiver itself logged as the time it took over each delivery.
        "receiver_ms_min": min(took, default=math.nan),
        "receiver_ms_p50": percentile(took, 50),
    }


@contextlib.asynccontextmanager
async def _watching(system: System, on: bool, samples: list[float]) -> AsyncIterator[None]:
    """While the block runs, sample the dispatchers' in-flight gauge every ``SAMPLE_EVERY``
    seconds into ``samples`` (when ``on`` and the system is the service)."""
    if not on or not isinstance(system, ServiceSystem):
        yield
        return
    service = system

    async def watch() -> None:
        async with aiohttp.ClientSession() as session:
            while True:
                samples.append(await service.in_flight(session))
                await asyncio.sleep(SAMPLE_EVERY)

    watcher = asyncio.create_task(watch())
    try:
        yield
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher


async def settled_counters(system: System, successes: int) -> dict[str, float]:
    """The system's counters once they count ``successes`` (a receipt precedes its metric)."""
    deadline = time.monotonic() + 3
    while True:
        counters = await system.counters()
        if not counters or counters.get("deliveries_success", 0) >= successes:
            return counters
        if time.monotonic() > deadline:
            return counters
        await asyncio.sleep(0.1)


async def latency(
    bench: Bench, system: System, rate: float, seconds: float, hanging: int = 0
) -> dict[str, Any]:
    """Publish at ``rate`` for ``seconds`` to running workers; lag of the healthy endpoints."""
    kind = "iso" if hanging else "lag"
    await warm_up(bench, system, f"{system.name}-{kind}warm")
    log.info("%s-%s: warmed up; publishing %.0f/s for %.0f s", system.name, kind, rate, seconds)
    run = f"{system.name}-{kind}"
    targets = bench.targets(run, hanging)
    healthy = {t.url for t in targets[: len(targets) - hanging]}
    system.reset_rss()
    count = round(rate * seconds)
    created = await system.publish(targets, count, rate)
    # Events went round-robin over the targets: event seq i went to target i % len(targets).
    order = list(created)
    expected = {i for n, i in enumerate(order) if targets[n % len(targets)].url in healthy}
    arrived, _ = await bench.wait(run, expected, patience_for(count, 60), system)
    return {
        "system": system.name,
        "label": system.label,
        "rate": rate,
        "seconds": seconds,
        "events": count,
        "healthy_events": len(expected),
        "delivered": len(arrived),
        "hanging_endpoints": hanging,
        "endpoints": len(targets),
        **lag_summary({i: created[i] for i in expected}, arrived),
        "peak_rss_mb": system.peak_rss_mb(),
        "counters": await system.counters(),
    }


async def storm(
    bench: Bench, system: System, rate: float, seconds: float, fail_for: float
) -> dict[str, Any]:
    """Every endpoint answers 503 for ``fail_for`` seconds, then recovers; measure the drain."""
    await warm_up(bench, system, "stormwarm")
    run = "storm"  # the receiver fails paths under /storm/ while its flag is set
    bench.receiver.fail(True)
    started = time.monotonic()
    system.reset_rss()
    created = await system.publish(bench.targets(run), round(rate * seconds), rate)
    await asyncio.sleep(max(0.0, fail_for - (time.monotonic() - started)))
    bench.receiver.fail(False)
    recovered_ms = time.time() * 1000
    arrived, _ = await bench.wait(run, set(created), patience_for(len(created), 180), system)
    receipts = bench.log.runs[run]
    last_ms = max((r.at_ms for r in arrived.values()), default=recovered_ms)
    return {
        "system": system.name,
        "label": system.label,
        "rate": rate,
        "seconds": seconds,
        "fail_for_s": fail_for,
        "events": len(created),
        "delivered": len(arrived),
        "missing": len(created) - len(arrived),
        "attempts": len(receipts),
        "failed_attempts": sum(1 for r in receipts if r.status == 503),
        "drain_s": round((last_ms - recovered_ms) / 1000, 3),
        **_duplicates(receipts, arrived),
        "timeline": _timeline(receipts, recovered_ms),
        "peak_rss_mb": system.peak_rss_mb(),
        "counters": await system.counters(),
    }


def _duplicates(receipts: list[Receipt], arrived: dict[str, Receipt]) -> dict[str, int]:
    successes = sum(1 for r in receipts if r.ok and r.event_id in arrived)
    unsigned = sum(1 for r in receipts if 200 <= r.status <= 299 and not r.signed)
    return {"duplicates": successes - len(arrived), "unsigned": unsigned}


def _timeline(receipts: list[Receipt], recovered_ms: float) -> list[list[float]]:
    """Per second relative to recovery: [second, 503 answers, 2xx answers]."""
    bins: dict[int, list[int]] = {}
    for receipt in receipts:
        second = int((receipt.at_ms - recovered_ms) // 1000)
        counts = bins.setdefault(second, [0, 0])
        counts[0 if receipt.status == 503 else 1] += 1
    return [[second, *bins[second]] for second in sorted(bins)]
