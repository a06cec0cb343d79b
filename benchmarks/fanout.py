"""Wide fan-out: one organisation's 100 endpoints against 10, end to end through one
dispatcher, in rounds alternating which goes first; and 10,000 endpoints of 1,000
organisations with the dispatcher's endpoint cache cold, timed from one publish of an event
per organisation. Both on the section's own receiver of 10 ports, whose log counts a
delivery per signed 2xx of an (event id, path).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from benchmarks.figures import fmt
from benchmarks.receipts import AccessLog, Receipt, rate_summary
from benchmarks.repeats import median_ratio, median_run, ratios
from benchmarks.sections import Goal, Run, table
from benchmarks.service import ServiceSystem
from benchmarks.workload import EVENT_TYPE, chunks, paced, payment_event
from harness.nginx import Receiver
from harness.sampling import CpuTrace
from svc.db.times import to_dt
from svc.envelope import Event
from svc.orgs import Scope

log = logging.getLogger(__name__)

KEY = "fanout"
UNIT = 500
"""Endpoints created per transaction, four transactions at once."""

CPU = "cpu_us_per_delivery_dispatcher"
COLD = ("organisations", "endpoints", "delivered", "first_s", "all_done_s")
Delivered = dict[tuple[str, str], Receipt]
"""The first signed 2xx of each (event id, path): one delivery each."""


@dataclass(frozen=True, slots=True)
class Sizes:
    wide: int = 100
    """Endpoints of the wide row's organisation."""
    narrow: int = 10
    """Endpoints of the row it is compared with."""
    ports: int = 10
    """Receiver ports the endpoints are spread over."""
    deliveries: int = 50_000
    """Deliveries of each row in each round (events: this over its endpoints)."""
    rounds: int = 4
    orgs: int = 1_000
    """Organisations of the cold start, each with ``per_org`` endpoints and one event."""
    per_org: int = 10


FULL = Sizes()
SMOKE = Sizes(wide=10, narrow=2, ports=2, deliveries=400, rounds=1, orgs=50, per_org=10)


def count_deliveries(receipts: Iterable[Receipt], expected: set[str], into: Delivered) -> int:
    """File the first signed 2xx of each (event id, path) of the ``expected`` events into
    ``into``; returns how many further signed 2xx there were for pairs already filed."""
    again = 0
    for receipt in receipts:
        if not receipt.ok or receipt.event_id not in expected:
            continue
        key = (receipt.event_id, receipt.path)
        if key in into:
            again += 1
        else:
            into[key] = receipt
    return again


def port_of(org: int, endpoint: int, per_org: int, ports: int) -> int:
    """Which receiver port endpoint ``endpoint`` of organisation ``org`` is on: all the
    endpoints in turn over the ports, so each port takes an even share."""
    return (org * per_org + endpoint) % ports


@dataclass
class Drain:
    """The section's own receiver with its log, and the service with its dispatcher."""

    receiver: Receiver
    system: ServiceSystem
    log: AccessLog = field(init=False)
    _read: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.log = AccessLog(*self.receiver.log_paths)

    async def endpoints(self, name: str, orgs: int, per_org: int, ports: int) -> list[str]:
        """``orgs`` organisations with ``per_org`` endpoints each at paths under ``/name/``,
        subscribed to the workload's event type; the organisations' ids."""
        system = self.system
        ids = await asyncio.gather(*(system.organisation(f"{name}o{i}") for i in range(orgs)))
        urls = [
            (org, self.receiver.url(f"/{name}/o{i}e{j}", port_of(i, j, per_org, ports)))
            for i, org in enumerate(ids)
            for j in range(per_org)
        ]
        gate = asyncio.Semaphore(4)

        async def create(part: Sequence[tuple[str, str]]) -> None:
            async with gate, system.ctx.unit() as unit:
                for org, url in part:
                    await system.ctx.endpoints.create(unit, Scope(org, "test"), url, [EVENT_TYPE])

        await asyncio.gather(*(create(urls[s : s + UNIT]) for s in range(0, len(urls), UNIT)))
        return list(ids)

    async def store(self, events: list[tuple[Event, str]]) -> None:
        """Store events (no outbox rows: they are published by ``publish``)."""
        async with self.system.ctx.unit() as unit:
            for part in chunks(range(len(events)), 5_000):
                await unit.copy(
                    "events",
                    ("id", "org_id", "env", "type", "created_at", "body"),
                    [
                        (e.id, org, e.environment, e.type, to_dt(e.created_ms), e.body)
                        for e, org in (events[seq] for seq in part)
                    ],
                )

    async def publish(self, events: list[tuple[Event, str]]) -> None:
        """Publish stored events on the events exchange, many confirms in flight."""
        broker = self.system.ctx.broker
        await paced(len(events), 0, lambda seq: broker.event(*events[seq]))

    async def wait(
        self, name: str, expected: set[str], deliveries: int, trace: CpuTrace | None = None
    ) -> tuple[Delivered, int]:
        """Wait until ``deliveries`` of the ``expected`` events arrived at paths under
        ``/name/``, or time ran out; the deliveries and how many came again."""
        found: Delivered = {}
        again = 0
        deadline = time.monotonic() + max(30.0, deliveries / 500)
        while True:
            if trace is not None:
                trace.sample()
            self.log.poll()
            receipts = self.log.runs[name]
            start, self._read[name] = self._read.get(name, 0), len(receipts)
            again += count_deliveries(receipts[start:], expected, found)
            if len(found) >= deliveries:
                break
            if time.monotonic() > deadline:
                log.warning("%s: %d of %d deliveries arrived", name, len(found), deliveries)
                break
            await asyncio.sleep(0.1)
        if trace is not None:
            trace.sample()  # brackets the receipts of the last poll
        return found, again

    async def drain(self, name: str, org: str, width: int, count: int) -> dict[str, Any]:
        """A backlog of ``count`` events of ``org`` (``width`` endpoints under ``/name/``) on
        the events queue, then a dispatcher started to drain it: deliveries per second from
        the first receipt to the last, and the dispatcher's CPU per delivery over that window."""
        made = [(payment_event(seq), org) for seq in range(count)]
        await self.store(made)
        await self.publish(made)
        await self.system.spawn()
        trace = CpuTrace(self.system.cpu_groups())
        trace.sample()
        await self.system.ready()
        found, again = await self.wait(name, {e.id for e, _ in made}, count * width, trace)
        await self.system.stop()
        receipts = list(found.values())
        row: dict[str, Any] = {
            "endpoints": width,
            "events": count,
            "delivered": len(found),
            "duplicates": again,
            **rate_summary(receipts),
        }
        if len(receipts) > 1:
            first, last = min(r.at_ms for r in receipts), max(r.at_ms for r in receipts)
            seconds = trace.between(first, last)["dispatcher"]
            row[CPU] = round(seconds * 1e6 / (len(receipts) - 1))
        return row

    async def cold_start(self, orgs: list[str], per_org: int) -> dict[str, Any]:
        """One event for each of ``orgs`` (endpoints under ``/cold/``), published at once to
        a dispatcher that is ready but has loaded no endpoint yet."""
        made = [(payment_event(seq), org) for seq, org in enumerate(orgs)]
        await self.store(made)
        await self.system.start()
        publish_ms = time.time() * 1000
        await self.publish(made)
        found, again = await self.wait("cold", {e.id for e, _ in made}, len(orgs) * per_org)
        await self.system.stop()
        times = [r.at_ms for r in found.values()]
        return {
            "organisations": len(orgs),
            "endpoints": len(orgs) * per_org,
            "delivered": len(found),
            "duplicates": again,
            "first_s": round((min(times) - publish_ms) / 1000, 3) if times else None,
            "all_done_s": round((max(times) - publish_ms) / 1000, 3) if times else None,
        }


async def run(run: Run) -> dict[str, Any]:
    sizes = SMOKE if run.smoke else FULL
    receiver = Receiver(run.workdir, buffered=not run.smoke, ports=sizes.ports, name="fanout")
    env = {"SVC_DELIVERY_TIMEOUT": "1s" if run.smoke else "10s"}
    system = ServiceSystem(run.procs, run.stores, 1, "fanout", env, scheduler=False)
    async with receiver:
        try:
            await system.open()
            result = await _measure(Drain(receiver, system), sizes)
        finally:
            await system.close()
    return {**result, "sizes": asdict(sizes)}


async def _measure(drain: Drain, sizes: Sizes) -> dict[str, Any]:
    widths = (sizes.narrow, sizes.wide)
    orgs = {w: (await drain.endpoints(f"w{w}", 1, w, sizes.ports))[0] for w in widths}
    runs: dict[int, list[dict[str, Any]]] = {w: [] for w in widths}
    for number in range(sizes.rounds):
        for width in widths if number % 2 == 0 else widths[::-1]:
            row = await drain.drain(f"w{width}", orgs[width], width, sizes.deliveries // width)
            runs[width].append(row)
            log.info("fanout %d endpoints, round %d: %s/s", width, number, row["rate_per_s"])
    cold = await drain.endpoints("cold", sizes.orgs, sizes.per_org, sizes.ports)
    rates = {w: [r["rate_per_s"] for r in found] for w, found in runs.items()}
    return {
        "rows": [median_run(found, "rate_per_s", True) for found in runs.values()],
        "round_ratios": ratios(rates[sizes.wide], rates[sizes.narrow]),
        "ratio": median_ratio(rates[sizes.wide], rates[sizes.narrow]),
        "cold": await drain.cold_start(cold, sizes.per_org),
    }


def targets(result: dict[str, Any] | None) -> list[Goal]:
    """Named by the full run's sizes, so a smoke run's targets keep the recorded names."""
    cold = (result or {}).get("cold", {})
    return [
        Goal(
            f"100 endpoints point: {FULL.wide} endpoints ÷ {FULL.narrow} endpoints, "
            "deliveries/s, 1 dispatcher end to end",
            (result or {}).get("ratio"),
            "≥ 0.9",
            lambda value: value >= 0.9,
        ),
        Goal(
            f"100 endpoints point: {FULL.orgs * FULL.per_org:,} endpoints, cache cold, "
            "first delivery after the publish, s",
            cold.get("first_s"),
            "≤ 2",
            lambda value: value <= 2,
        ),
    ]


def markdown(result: dict[str, Any] | None) -> list[str]:
    if not result:
        return []
    narrow, cold = result["rows"][0], result["cold"]
    rows = [
        [row["endpoints"], fmt(row["events"]), fmt(row["delivered"]), fmt(row["rate_per_s"])]
        + [fmt(1.0 if row is narrow else result["ratio"], 2), fmt(row.get(CPU))]
        for row in result["rows"]
    ]
    rounds = " · ".join(f"{r:.2f}" for r in result["round_ratios"])
    return [
        f"**Wide fan-out**: one organisation's endpoints on {result['sizes']['ports']} receiver "
        f"ports, one dispatcher, a backlog of events end to end; the rounds' wide ÷ narrow: "
        f"{rounds}.",
        "",
        *table(
            "endpoints | events | deliveries | deliveries/s | ratio | CPU µs per delivery", rows
        ),
        "**Cold endpoint cache**: a dispatcher just started, one event per organisation "
        "published at once; times from the start of that publish.",
        "",
        *table(
            "organisations | endpoints | deliveries | first delivery, s | all done, s",
            [[fmt(cold[k], 3 if k.endswith("_s") else 0) for k in COLD]],
        ),
    ]
