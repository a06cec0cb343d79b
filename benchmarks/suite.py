"""The whole comparison in one run: its sizes (full or smoke), its systems and their order."""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks.baselines import Baseline
from benchmarks.figures import Row, fold
from benchmarks.listing.fill import Sizes
from benchmarks.listing.run import listing
from benchmarks.runs import Bench, latency, outbox, storm, throughput
from benchmarks.sections import Run, sections
from benchmarks.service import ServiceSystem, Stores
from benchmarks.workload import System
from harness.nginx import BlackHole, Receiver
from harness.processes import Processes

log = logging.getLogger(__name__)

SYSTEMS = (
    *"naive1 svc1 svc1-e2e svc1-slow naive2 svc2 svc2-e2e outbox".split(),
    *"celery-prefork celery-gevent dramatiq storm listing".split(),
    *(section.KEY for section in sections()),
)
ROUND = ("svc1-slow", "svc1", "naive1", "svc1-e2e", "naive2", "svc2-e2e", "svc2", "outbox")
"""The systems the targets compare, run in rounds in this order: the two sides of each ratio
held close to its goal back to back, so that the machine's speed moves little between them
(slow receivers, then svc 1, whose drain comes before its latency and isolation runs;
naive 1, then svc 1 end to end; naive 2, then svc 2 end to end)."""


def rounds(only: Sequence[str], count: int) -> list[list[str]]:
    """``count`` rounds, each running every compared system of ``only`` once."""
    return [[name for name in ROUND if name in only] for _ in range(count)]


@dataclass(frozen=True, slots=True)
class Plan:
    """How much of everything; the defaults are the recorded full run."""

    endpoints: int = 10
    events: int = 50_000  # the backlogs of the service (the outbox's too) and the naive consumer
    celery_events: int = 10_000
    dramatiq_events: int = 20_000
    slow_delay: float = 0.2  # svc1-slow: every receiver answers this many seconds late
    outbox_sweep_interval: str = "5s"
    rate: float = 250
    seconds: float = 20
    hanging: int = 2
    storm_rate: float = 100
    storm_seconds: float = 10
    storm_fail_for: float = 20
    storm_ladder: str = "1s,2s..60s"
    delivery_timeout: str = "10s"
    repeats: int = 3
    smoke: bool = False  # tiny counts; the sections and the listing choose their own by it


# Big enough that the deliveries outlast a CPU sample or two (every 0.25 s).
SMOKE = Plan(
    endpoints=5,
    events=600,
    celery_events=200,
    dramatiq_events=200,
    outbox_sweep_interval="1s",
    rate=40,
    seconds=1,
    hanging=1,
    storm_rate=40,
    storm_seconds=0.5,
    storm_fail_for=1.5,
    delivery_timeout="1s",
    repeats=1,
    smoke=True,
)
LISTING = Sizes(2_000_000, 1_000_000, days=6, samples=300, warm_up=20, limit=20, settle=120)
# A hundred events of the rarest type: two full pages of it.
LISTING_SMOKE = Sizes(100_000, 2_000, days=6, samples=5, warm_up=1, limit=20, settle=0)


@dataclass
class Suite:
    """Runs the selected systems one after another against one receiver."""

    plan: Plan
    stores: Stores
    workdir: Path
    admin_url: str
    only: tuple[str, ...] = SYSTEMS

    async def run(self) -> Row:
        plan = self.plan
        results: Row = {"plan": asdict(plan), "throughput": [], "latency": []}
        procs = Processes(self.workdir)
        slow = plan.slow_delay if "svc1-slow" in self.only else None
        async with (
            Receiver(self.workdir, buffered=not plan.smoke, slow_delay=slow) as receiver,
            BlackHole() as hole,
        ):
            results["receiver"] = receiver.version()
            bench = Bench(receiver, hole, plan.endpoints)
            try:
                found: list[Row] = []
                for number, names in enumerate(rounds(self.only, plan.repeats), 1):
                    found.append({"throughput": [], "latency": []})
                    for name in names:
                        log.info("running %s (round %d of %d)", name, number, plan.repeats)
                        await self._one(bench, procs, name, found[-1])
                fold(found, results)
                for section in ("throughput", "latency"):  # shown in the order asked for
                    results[section].sort(key=lambda row: self.only.index(row["system"]))
                for name in (name for name in self.only if name not in ROUND):
                    log.info("running %s", name)
                    await self._one(bench, procs, name, results)
            finally:
                await procs.stop_all()
        return results

    async def _one(self, bench: Bench, procs: Processes, name: str, results: Row) -> None:
        # What earlier runs left in this process (their receipts: over a million objects by
        # the API's sections) moves out of the collector's way: a full collection over it
        # takes tenths of a second, which would fall on whatever this process is timing.
        gc.collect()
        gc.freeze()
        started = time.monotonic()
        section = next((s for s in sections() if s.KEY == name), None)
        if name == "listing":
            sizes = LISTING_SMOKE if self.plan.smoke else LISTING
            results[name] = await listing(procs, self.stores, self.admin_url, sizes)
        elif section is not None:
            run = Run(bench, procs, self.stores, self.workdir, self.admin_url, self.plan.smoke)
            results[name] = await section.run(run)
        else:
            async with self._system(procs, name).opened() as system:
                await self._delivery(bench, system, name, results)
        log.info("%s done in %.1f s", name, time.monotonic() - started)

    def _system(self, procs: Processes, name: str) -> System:
        plan, stores = self.plan, self.stores
        if name.startswith(("naive", "celery", "dramatiq")):
            return Baseline(procs, stores.amqp_url, name)
        env = {"SVC_DELIVERY_TIMEOUT": plan.delivery_timeout}
        if name == "outbox":
            env = {"SVC_OUTBOX_SWEEP_INTERVAL": plan.outbox_sweep_interval}
            return ServiceSystem(
                procs, stores, 0, name, env, label="svc, 1 scheduler, outbox sweep"
            )
        if name == "storm":
            env["SVC_RETRY_LADDER"] = plan.storm_ladder
            return ServiceSystem(procs, stores, 1, name, env)
        # svc1, svc2, end to end, slow receivers: dispatchers alone, no scheduler
        kind = name.partition("-")[2]
        system = ServiceSystem(procs, stores, int(name[3]), name, env, False, kind != "e2e")
        slow = f", {round(plan.slow_delay * 1000)} ms receivers"
        system.label += {"e2e": ", end to end", "slow": slow}.get(kind, "")
        return system

    async def _delivery(self, bench: Bench, system: System, name: str, results: Row) -> None:
        plan = self.plan
        if isinstance(system, Baseline) or name.startswith("svc"):
            counts = {"celery": plan.celery_events, "dramatiq": plan.dramatiq_events}
            count = counts.get(name.split("-")[0], plan.events)
            slow = name == "svc1-slow"
            results["throughput"].append(await throughput(bench, system, count, slow))
            if isinstance(system, ServiceSystem) and name in ("svc1", "svc2"):  # what targets read
                results["latency"].append(await latency(bench, system, plan.rate, plan.seconds))
                if name == "svc1":  # right after the all-healthy run, at the same rate
                    iso = await latency(bench, system, plan.rate, plan.seconds, plan.hanging)
                    results["isolation"] = iso
        elif isinstance(system, ServiceSystem) and name == "outbox":
            results[name] = await outbox(system, plan.events)
        elif isinstance(system, ServiceSystem) and name == "storm":
            rate, seconds, fail_for = plan.storm_rate, plan.storm_seconds, plan.storm_fail_for
            results[name] = await storm(bench, system, rate, seconds, fail_for)
