"""The delivery runs: backlog throughput, paced latency and isolation, retry storm, outbox
catch-up. A delivery counts when the receiver's log holds a signed 2xx for its event id."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from dataclasses import dataclass, field

from benchmarks.figures import Row
from benchmarks.receipts import AccessLog, Receipt, rate_summary, spread
from benchmarks.service import ServiceSystem, store_events
from benchmarks.workload import System, Target, payment_event
from harness.nginx import BlackHole, Receiver
from harness.sampling import CpuTrace, servers

log = logging.getLogger(__name__)

WARM_UP = 20
OUTBOX_AGE_MARGIN = 60.0  # seconds by which the outbox run's rows are older than the sweep age


@dataclass
class Bench:
    """What every run shares: the receivers and the log they write."""

    receiver: Receiver
    hole: BlackHole
    endpoints: int
    log: AccessLog = field(init=False)

    def __post_init__(self) -> None:
        self.log = AccessLog(self.receiver.log_path)

    def cpu_groups(self, system: System) -> dict[str, list[int]]:
        """The system's processes by role, the broker, PostgreSQL if it uses it, the receiver."""
        groups = {**system.cpu_groups(), "broker": servers("beam.smp")}
        if isinstance(system, ServiceSystem):
            groups["postgres"] = servers("postgres")
        return {**groups, "nginx": self.receiver.pids}

    def targets(self, run: str, hanging: int = 0, slow: bool = False) -> list[Target]:
        """The targets of ``run`` (slow or not), the last ``hanging`` of them never answering."""
        url = self.receiver.slow_url if slow else self.receiver.url
        healthy = self.endpoints - hanging
        return [
            Target(url(f"/{run}/e{i}") if i < healthy else self.hole.url(f"/{run}/e{i}"))
            for i in range(self.endpoints)
        ]

    async def wait(
        self, run: str, expected: set[str], patience: float, trace: CpuTrace | None = None
    ) -> dict[str, Receipt]:
        """Wait until every expected id arrived or ``patience`` ran out, sampling ``trace``."""
        deadline = time.monotonic() + patience
        while True:
            if trace is not None:
                trace.sample()
            self.log.poll()
            if self.log.all_arrived(run, expected) or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.25)
        # The receipts of the last poll came after the sample before it: one more sample
        # brackets every receipt, so a short run is never measured as taking no CPU.
        if trace is not None:
            trace.sample()
        arrived = self.log.first_ok.get(run, {})
        found = {i: arrived[i] for i in expected if i in arrived}
        if len(found) < len(expected):
            log.warning("%s: %d of %d arrived in %.0f s", run, len(found), len(expected), patience)
        return found


def patience_for(count: int, floor: float) -> float:
    return max(floor, count / 100)


async def warm_up(bench: Bench, system: System, run: str) -> None:
    """A few events first, so workers are up and connections open before measuring."""
    created = await system.publish(bench.targets(run), WARM_UP, 0)
    if len(await bench.wait(run, set(created), 60)) < len(created):
        raise RuntimeError(f"{system.name}: warm-up deliveries did not arrive")


def _head(bench: Bench, system: System, run: str, events: int, arrived: dict[str, Receipt]) -> Row:
    successes = sum(1 for r in bench.log.runs[run] if r.ok and r.event_id in arrived)
    return {
        "system": system.name,
        "label": system.label,
        "events": events,
        "delivered": len(arrived),
        "duplicates": successes - len(arrived),
    }


async def throughput(bench: Bench, system: System, count: int, slow: bool = False) -> Row:
    """Drain a backlog with the workers started after it: rate and CPU (``slow``: late answers)."""
    run = f"{system.name}-tp"
    created = await system.publish(bench.targets(run, slow=slow), count, 0)
    log.info("%s: %d events published; starting workers", run, count)
    await system.spawn()
    # Sampling starts before the workers are ready: what a quick one does meanwhile counts.
    trace = CpuTrace(bench.cpu_groups(system))
    trace.sample()
    await system.ready()
    arrived = await bench.wait(run, set(created), patience_for(count, 60), trace)
    receipts = list(arrived.values())
    result = _head(bench, system, run, count, arrived) | {"input": system.input}
    result |= rate_summary(receipts)
    if len(receipts) > 1:  # each group's CPU from the first receipt to the last
        times = [r.at_ms for r in receipts]
        for group, seconds in trace.between(min(times), max(times)).items():
            result[f"cpu_us_per_delivery_{group}"] = round(seconds * 1e6 / (len(receipts) - 1))
    if not isinstance(system, ServiceSystem):
        return result
    result["peak_rss_mb"] = system.peak_rss_mb()
    if slow:  # the receiver really answered late
        result["receiver_ms_min"] = min((r.took_ms for r in receipts), default=math.nan)
    return result


async def latency(
    bench: Bench, system: ServiceSystem, rate: float, seconds: float, hanging: int = 0
) -> Row:
    """Publish at ``rate`` for ``seconds`` to running workers; lag of the healthy endpoints."""
    run = f"{system.name}-{'iso' if hanging else 'lag'}"
    await warm_up(bench, system, f"{run}warm")
    log.info("%s: warmed up; publishing %.0f/s for %.0f s", run, rate, seconds)
    targets = bench.targets(run, hanging)
    system.reset_rss()
    count = round(rate * seconds)
    created = await system.publish(targets, count, rate)
    # Events went round-robin over the targets, the hanging ones last.
    healthy = len(targets) - hanging
    expected = {i for n, i in enumerate(created) if n % len(targets) < healthy}
    arrived = await bench.wait(run, expected, patience_for(count, 60))
    lags = spread([arrived[i].at_ms - created[i] for i in expected if i in arrived])
    return _head(bench, system, run, count, arrived) | {
        "healthy_events": len(expected),
        "hanging_endpoints": hanging,
        "endpoints": len(targets),
        **{f"lag_{key}": value for key, value in lags.items()},
        "peak_rss_mb": system.peak_rss_mb(),
    }


async def storm(
    bench: Bench, system: ServiceSystem, rate: float, seconds: float, fail_for: float
) -> Row:
    """Every endpoint answers 503 for ``fail_for`` seconds, then recovers; time the drain."""
    await system.start()
    await warm_up(bench, system, "stormwarm")
    run = "storm"  # the receiver fails paths under /storm/ while its flag is set
    bench.receiver.fail(True)
    started = time.monotonic()
    system.reset_rss()
    created = await system.publish(bench.targets(run), round(rate * seconds), rate)
    await asyncio.sleep(max(0.0, fail_for - (time.monotonic() - started)))
    bench.receiver.fail(False)
    recovered_ms = time.time() * 1000
    arrived = await bench.wait(run, set(created), patience_for(len(created), 180))
    last_ms = max((r.at_ms for r in arrived.values()), default=recovered_ms)
    return _head(bench, system, run, len(created), arrived) | {
        "missing": len(created) - len(arrived),
        "failed_attempts": sum(1 for r in bench.log.runs[run] if r.status == 503),
        "drain_s": round((last_ms - recovered_ms) / 1000, 3),
        "peak_rss_mb": system.peak_rss_mb(),
    }


async def outbox(system: ServiceSystem, count: int) -> Row:
    """One scheduler sweeping out ``count`` stored events whose publish was lost: events/s from
    the last poll of the outbox that saw every row to the first that saw none."""
    settings = system.settings
    await system.start()  # its start-up sweep finds nothing of this run
    org = await system.organisation("outbox")

    async def rows() -> int:
        return int(await system.ctx.db.fetchval("SELECT count(*) FROM outbox"))

    baseline = await rows()
    deadline = time.monotonic() + patience_for(count, 60) + settings.outbox_sweep_interval
    age = settings.outbox_sweep_age + OUTBOX_AGE_MARGIN
    await store_events(system.ctx, [(payment_event(s, age), org) for s in range(count)], True)
    stored_ms = time.time() * 1000
    log.info("outbox: %d events with lost publishes stored; sweeping", count)
    polls: list[tuple[float, int]] = []  # unix ms, rows left
    while not polls or (polls[-1][1] > 0 and time.monotonic() <= deadline):
        polls.append((time.time() * 1000, max(0, await rows() - baseline)))
        await asyncio.sleep(0.05)
    start_ms = max((at for at, left in polls if left >= count), default=stored_ms)
    end_ms = next((at for at, left in polls if left == 0), None)
    rate = None
    if end_ms is not None and end_ms > start_ms:
        rate = round(count / (end_ms - start_ms) * 1000, 1)
    return {"system": "outbox", "label": system.label, "events": count, "rate_per_s": rate}
