"""The whole comparison in one run: sizes (full or smoke) and the order of the runs."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from benchmarks import repeats
from benchmarks.baselines import CelerySystem, DramatiqSystem
from benchmarks.listing.fill import Sizes
from benchmarks.listing.run import listing
from benchmarks.naive import NaiveSystem
from benchmarks.outbox import outbox
from benchmarks.payments import payments, rate_limit_cost
from benchmarks.runs import Bench, latency, storm, throughput
from benchmarks.sections import Run, sections
from benchmarks.service import ServiceSystem, Stores
from benchmarks.workload import System
from harness.database import LOCAL_ADMIN_URL
from harness.nginx import BlackHole, Receiver
from harness.processes import Processes

log = logging.getLogger(__name__)

SYSTEMS = (
    "naive1",
    "svc1",
    "svc1-e2e",
    "svc1-slow",
    "naive2",
    "svc2",
    "svc2-e2e",
    "outbox",
    "celery-prefork",
    "celery-gevent",
    "dramatiq",
    "storm",
    "payments",
    "listing",
    *(section.KEY for section in sections()),
)
REPEATED = frozenset(SYSTEMS[:8])
"""The systems the targets compare: run ``Plan.repeats`` times in rounds, each reported by
its median run (``benchmarks.repeats``); each is next to what it is compared with."""


def rounds(only: Sequence[str], count: int) -> list[list[str]]:
    """The order the compared systems of ``only`` run in: ``count`` rounds, each running every
    one of them once, so that the runs a target divides alternate on the machine (naive 1,
    svc 1, …; then again) instead of one system's runs all coming first."""
    return [[name for name in only if name in REPEATED] for _ in range(count)]


@dataclass(frozen=True, slots=True)
class Plan:
    """How much of everything; the defaults are the recorded full run."""

    endpoints: int = 10
    service_events: int = 50_000
    naive_events: int = 50_000
    celery_events: int = 10_000
    dramatiq_events: int = 20_000
    rate: float = 250
    seconds: float = 20
    hanging: int = 2
    storm_rate: float = 100
    storm_seconds: float = 10
    storm_fail_for: float = 20
    storm_ladder: str = "1s,2s..60s"
    delivery_timeout: str = "10s"
    buffered_log: bool = True
    payments: int = 5_000
    payment_concurrency: int = 32
    payment_warm_up: int = 100
    rate_limit_rounds: int = 5
    """Alternating rounds of payment creation with the per-key rate limit on and off."""
    slow_events: int = 50_000
    slow_delay: float = 0.2
    """svc1-slow: every receiver answers this many seconds after the request."""
    outbox_events: int = 50_000
    outbox_sweep_interval: str = "5s"
    """``SVC_OUTBOX_SWEEP_INTERVAL`` of the outbox run (the default: the service's own)."""
    repeats: int = 3
    """Rounds of the compared systems (``REPEATED``); each row is the median run."""
    listing_events: int = 2_000_000
    """The listing run's scope: events (with their delivery attempts), and payments."""
    listing_payments: int = 1_000_000
    listing_days: float = 6
    """The days the listing's rows are spread over (within ``SVC_EVENT_RETENTION``)."""
    listing_samples: int = 300
    """Timed requests of each listing page, after ``listing_warm_up`` rounds of all."""
    listing_warm_up: int = 20
    listing_limit: int = 20
    """Rows per listing page (the API's default)."""
    listing_settle: float = 120
    """After the fill, wait up to this many seconds for a quiet machine before timing."""
    smoke: bool = False
    """Tiny counts; the sections of ``benchmarks.sections`` choose their own sizes by it."""

    def scaled(self, events: int) -> Plan:
        """The same plan with ``events`` for the service (slow receivers too) and the naive
        consumer."""
        return replace(self, service_events=events, naive_events=events, slow_events=events)


# Big enough that the deliveries outlast a CPU sample or two (every 0.25 s): a run over
# before the first sample could not be charged any CPU.
SMOKE = Plan(
    endpoints=5,
    service_events=600,
    naive_events=600,
    celery_events=200,
    dramatiq_events=200,
    rate=40,
    seconds=1,
    hanging=1,
    storm_rate=40,
    storm_seconds=0.5,
    storm_fail_for=1.5,
    delivery_timeout="1s",
    buffered_log=False,
    payments=40,
    payment_concurrency=8,
    payment_warm_up=8,
    rate_limit_rounds=1,
    slow_events=60,
    outbox_events=200,
    outbox_sweep_interval="1s",
    repeats=1,
    listing_events=100_000,  # a hundred of the rarest type: two full pages of it
    listing_payments=2_000,
    listing_samples=5,
    listing_warm_up=1,
    listing_settle=0,
    smoke=True,
)


@dataclass
class Suite:
    """Runs the selected systems one after another against one receiver."""

    plan: Plan
    stores: Stores
    workdir: Path
    only: tuple[str, ...] = SYSTEMS
    profile_dir: Path | None = None
    paced: bool = True
    admin_url: str = LOCAL_ADMIN_URL
    """Where the listing run creates (and drops) its own database."""

    async def run(self) -> dict[str, Any]:
        results: dict[str, Any] = {"plan": asdict(self.plan), "throughput": [], "latency": []}
        procs = Processes(self.workdir)
        slow = self.plan.slow_delay if "svc1-slow" in self.only else None
        async with (
            Receiver(self.workdir, buffered=self.plan.buffered_log, slow_delay=slow) as receiver,
            BlackHole() as hole,
        ):
            results["receiver"] = receiver.version()
            if receiver.slow_kind:
                results["slow_receiver"] = receiver.slow_kind
            bench = Bench(
                receiver,
                hole,
                self.plan.endpoints,
                self.profile_dir,
                self.stores.amqp_url,
                self.stores.database_url,
            )
            try:
                folded = []
                for number, names in enumerate(rounds(self.only, self.plan.repeats), 1):
                    found: dict[str, Any] = {"throughput": [], "latency": []}
                    for name in names:
                        log.info("running %s (round %d of %d)", name, number, self.plan.repeats)
                        await self._one(bench, procs, name, found)
                    folded.append(found)
                repeats.fold(folded, results)
                for name in (name for name in self.only if name not in REPEATED):
                    log.info("running %s", name)
                    await self._one(bench, procs, name, results)
            finally:
                await procs.stop_all()
        return results

    def _systems(self, procs: Processes) -> dict[str, Callable[[], tuple[System, int]]]:
        plan, stores, work = self.plan, self.stores, self.workdir
        amqp = stores.amqp_url
        timeout = {"SVC_DELIVERY_TIMEOUT": plan.delivery_timeout}
        slow_ms = round(plan.slow_delay * 1000)

        def dispatchers(count: int, name: str, **options: Any) -> ServiceSystem:
            """Dispatchers only: the scheduler is off the delivery path."""
            return ServiceSystem(procs, stores, count, name, dict(timeout), False, **options)

        return {
            "svc1": lambda: (dispatchers(1, "svc1", jobs=True), plan.service_events),
            "svc2": lambda: (dispatchers(2, "svc2", jobs=True), plan.service_events),
            "svc1-e2e": lambda: (
                dispatchers(1, "svc1-e2e", label="svc, 1 dispatcher, end to end"),
                plan.service_events,
            ),
            "svc2-e2e": lambda: (
                dispatchers(2, "svc2-e2e", label="svc, 2 dispatchers, end to end"),
                plan.service_events,
            ),
            "svc1-slow": lambda: (
                dispatchers(
                    1, "svc1-slow", jobs=True, label=f"svc, 1 dispatcher, {slow_ms} ms receivers"
                ),
                plan.slow_events,
            ),
            "outbox": lambda: (
                ServiceSystem(
                    procs,
                    stores,
                    0,
                    "outbox",
                    {"SVC_OUTBOX_SWEEP_INTERVAL": plan.outbox_sweep_interval},
                    label="svc, 1 scheduler, outbox sweep",
                ),
                plan.outbox_events,
            ),
            "naive1": lambda: (NaiveSystem(procs, amqp, 1, "naive1"), plan.naive_events),
            "naive2": lambda: (NaiveSystem(procs, amqp, 2, "naive2"), plan.naive_events),
            "celery-prefork": lambda: (
                CelerySystem(procs, amqp, work, "celery-prefork", pool="prefork"),
                plan.celery_events,
            ),
            "celery-gevent": lambda: (
                CelerySystem(procs, amqp, work, "celery-gevent", pool="gevent"),
                plan.celery_events,
            ),
            "dramatiq": lambda: (
                DramatiqSystem(procs, amqp, work, "dramatiq"),
                plan.dramatiq_events,
            ),
            "storm": lambda: (
                ServiceSystem(
                    procs,
                    stores,
                    1,
                    "storm",
                    {**timeout, "SVC_RETRY_LADDER": plan.storm_ladder},
                ),
                0,
            ),
        }

    async def _one(
        self, bench: Bench, procs: Processes, name: str, results: dict[str, Any]
    ) -> None:
        plan = self.plan
        if name == "payments":
            await self._payments(bench, procs, results)
            return
        if name == "listing":
            await self._listing(procs, results)
            return
        section = next((s for s in sections() if s.KEY == name), None)
        if section is not None:
            started = time.monotonic()
            run = Run(
                bench,
                procs,
                self.stores,
                self.workdir,
                self.admin_url,
                plan.smoke,
                self.profile_dir,
            )
            try:
                results[name] = await section.run(run)
            finally:
                log.info("%s done in %.1f s", name, time.monotonic() - started)
            return
        system, count = self._systems(procs)[name]()
        started = time.monotonic()
        try:
            await system.open()
            if name == "storm":
                await system.start()
                results["storm"] = await storm(
                    bench, system, plan.storm_rate, plan.storm_seconds, plan.storm_fail_for
                )
                return
            if name == "outbox":
                assert isinstance(system, ServiceSystem)
                results["outbox"] = await outbox(bench, system, count)
                return
            if name.endswith("-e2e"):
                # A backlog of events, as naive drains a backlog of messages: events in (on
                # the events queue), deliveries out, with every hop on the path.
                results["throughput"].append(await throughput(bench, system, count))
                return
            slow = name == "svc1-slow"  # like svc1, only the receivers answer late
            results["throughput"].append(await throughput(bench, system, count, slow))
            if not self.paced or slow:
                return
            results["latency"].append(await latency(bench, system, plan.rate, plan.seconds))
            if name == "svc1":
                # Isolation right after the all-healthy run, same process, rate and duration.
                results["isolation"] = await latency(
                    bench, system, plan.rate, plan.seconds, hanging=plan.hanging
                )
        finally:
            await system.close()
            log.info("%s done in %.1f s", name, time.monotonic() - started)

    async def _payments(self, bench: Bench, procs: Processes, results: dict[str, Any]) -> None:
        """Payment creation through one API process, its webhooks delivered alongside."""
        plan = self.plan
        env = {
            "SVC_DELIVERY_TIMEOUT": plan.delivery_timeout,
            "SVC_RATE_LIMIT_TEST": "0",
            "SVC_RATE_LIMIT_LIVE": "1000000",  # live keys are counted, never refused
        }
        system = ServiceSystem(procs, self.stores, 1, "payments", env, api=True)
        started = time.monotonic()
        try:
            await system.open()
            results["payments"] = await payments(
                bench, system, plan.payments, plan.payment_concurrency, plan.payment_warm_up
            )
            results["payments"]["rate_limit"] = await rate_limit_cost(
                system, plan.payments, plan.payment_concurrency, plan.rate_limit_rounds
            )
        finally:
            await system.close()
            log.info("payments done in %.1f s", time.monotonic() - started)

    async def _listing(self, procs: Processes, results: dict[str, Any]) -> None:
        """The API's lists of one large scope, in a database of its own."""
        plan = self.plan
        sizes = Sizes(
            plan.listing_events,
            plan.listing_payments,
            plan.listing_days,
            plan.listing_samples,
            plan.listing_warm_up,
            plan.listing_limit,
            plan.listing_settle,
        )
        started = time.monotonic()
        try:
            results["listing"] = await listing(procs, self.stores, self.admin_url, sizes)
        finally:
            log.info("listing done in %.1f s", time.monotonic() - started)
