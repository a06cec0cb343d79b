"""The whole comparison in one run: sizes (full or smoke) and the order of the runs."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from benchmarks.baselines import CelerySystem, DramatiqSystem
from benchmarks.naive import NaiveSystem
from benchmarks.procs import Processes
from benchmarks.receivers import BlackHole, Receiver
from benchmarks.runs import Bench, latency, storm, throughput
from benchmarks.service import ServiceSystem
from benchmarks.workload import System

log = logging.getLogger(__name__)

SYSTEMS = (
    "svc1",
    "svc2",
    "svc1-e2e",
    "svc2-e2e",
    "naive1",
    "naive2",
    "celery-prefork",
    "celery-gevent",
    "dramatiq",
    "storm",
)


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

    def scaled(self, events: int) -> Plan:
        """The same plan with ``events`` for the service and the naive consumer."""
        return replace(self, service_events=events, naive_events=events)


SMOKE = Plan(
    endpoints=5,
    service_events=60,
    naive_events=60,
    celery_events=30,
    dramatiq_events=30,
    rate=40,
    seconds=1,
    hanging=1,
    storm_rate=40,
    storm_seconds=0.5,
    storm_fail_for=1.5,
    delivery_timeout="1s",
    buffered_log=False,
)


@dataclass
class Suite:
    """Runs the selected systems one after another against one receiver."""

    plan: Plan
    amqp_url: str
    redis_url: str
    workdir: Path
    only: tuple[str, ...] = SYSTEMS
    profile_dir: Path | None = None
    paced: bool = True

    async def run(self) -> dict[str, Any]:
        results: dict[str, Any] = {"plan": asdict(self.plan), "throughput": [], "latency": []}
        procs = Processes(self.workdir)
        async with (
            Receiver(self.workdir, buffered=self.plan.buffered_log) as receiver,
            BlackHole() as hole,
        ):
            results["receiver"] = receiver.version()
            bench = Bench(receiver, hole, self.plan.endpoints, self.profile_dir)
            try:
                for name in self.only:
                    log.info("running %s", name)
                    await self._one(bench, procs, name, results)
            finally:
                await procs.stop_all()
        return results

    def _systems(self, procs: Processes) -> dict[str, Callable[[], tuple[System, int]]]:
        plan, amqp, redis, work = self.plan, self.amqp_url, self.redis_url, self.workdir
        timeout = {"SVC_DELIVERY_TIMEOUT": plan.delivery_timeout}
        return {
            "svc1": lambda: (
                ServiceSystem(procs, amqp, redis, 1, "svc1", dict(timeout)),
                plan.service_events,
            ),
            "svc2": lambda: (
                ServiceSystem(procs, amqp, redis, 2, "svc2", dict(timeout)),
                plan.service_events,
            ),
            "svc1-e2e": lambda: (
                ServiceSystem(procs, amqp, redis, 1, "svc1-e2e", dict(timeout), False),
                plan.service_events,
            ),
            "svc2-e2e": lambda: (
                ServiceSystem(procs, amqp, redis, 2, "svc2-e2e", dict(timeout), False),
                plan.service_events,
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
                    amqp,
                    redis,
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
            results["throughput"].append(await throughput(bench, system, count))
            if not self.paced or name.endswith("-e2e"):
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
