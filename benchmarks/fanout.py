"""Wide fan-out end to end through one dispatcher: 100 endpoints against 10, 100 with a payload
filter each (always met) against 100 without, in rounds rotating which goes first; and a cold
endpoint cache over 10,000 endpoints of 1,000 organisations, one event each."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from benchmarks.figures import fmt, median_of, median_run, ratios
from benchmarks.receipts import AccessLog, Receipt, rate_summary
from benchmarks.sections import Goal, Run, goal, table
from benchmarks.service import ServiceSystem, store_events
from benchmarks.workload import EVENT_TYPE, paced, payment_event
from harness.nginx import Receiver
from svc.orgs import Scope
from svc.webhooks.model import Options

log = logging.getLogger(__name__)

KEY = "fanout"
Delivered = dict[tuple[str, str], Receipt]  # the first signed 2xx of each (event id, path)


@dataclass(frozen=True, slots=True)
class Sizes:
    wide: int = 100
    narrow: int = 10
    ports: int = 10  # receiver ports the endpoints are spread over
    deliveries: int = 50_000  # of each row in each round (events: this over its endpoints)
    rounds: int = 6  # each of the three rows goes first in two: rounds differ by a tenth
    orgs: int = 1_000  # of the cold start, each with ``per_org`` endpoints and one event
    per_org: int = 10


FULL = Sizes()
SMOKE = Sizes(wide=10, narrow=2, ports=2, deliveries=400, rounds=1, orgs=50, per_org=10)


def count_deliveries(receipts: Iterable[Receipt], expected: set[str], into: Delivered) -> None:
    """File the first signed 2xx of each (event id, path) of the ``expected`` events."""
    for receipt in receipts:
        if receipt.ok and receipt.event_id in expected:
            into.setdefault((receipt.event_id, receipt.path), receipt)


def port_of(org: int, endpoint: int, per_org: int, ports: int) -> int:
    """The receiver port of an endpoint: each port takes an even share."""
    return (org * per_org + endpoint) % ports


@dataclass
class Fanout:
    """The section's service, its receiver and the receiver's log."""

    system: ServiceSystem
    receiver: Receiver
    access: AccessLog

    async def endpoints(self, name: str, orgs: int, per_org: int, filtered: bool) -> list[str]:
        """``orgs`` organisations' ids, each with ``per_org`` endpoints under ``/name/``, each
        ``filtered`` by a condition of its own that every event meets."""
        ctx, ports = self.system.ctx, len(self.receiver.ports)
        ids = await asyncio.gather(*(self.system.organisation(f"{name}o{i}") for i in range(orgs)))
        urls = [
            (org, self.receiver.url(f"/{name}/o{i}e{j}", port_of(i, j, per_org, ports)))
            for i, org in enumerate(ids)
            for j in range(per_org)
        ]
        for start in range(0, len(urls), 500):
            async with ctx.unit() as unit:
                for n, (org, url) in enumerate(urls[start : start + 500], start):
                    condition = {"data.amount": {"$gte": n}, "data.currency": "CHF"}
                    options = Options(filter=condition if filtered else None)
                    scope = Scope(org, "test")
                    await ctx.endpoints.create(unit, scope, url, [EVENT_TYPE], "", options)
        return list(ids)

    async def drain(
        self, name: str, orgs: list[str], width: int, count: int, cold: bool = False
    ) -> tuple[Delivered, float]:
        """``count`` events of each of ``orgs`` published, the dispatcher started after (a
        backlog) or, ``cold``, before; the deliveries and when the publish began (unix ms)."""
        system = self.system
        made = [(payment_event(seq), org) for seq in range(count) for org in orgs]
        await store_events(system.ctx, made, outbox=False)
        if cold:
            await system.start()
        publish_ms = time.time() * 1000
        await paced(len(made), 0, lambda seq: system.ctx.broker.event(*made[seq]))
        if not cold:
            await system.spawn()
        await system.ready()
        expected, deliveries = {e.id for e, _ in made}, len(made) * width
        found: Delivered = {}
        read = 0
        deadline = time.monotonic() + max(30.0, deliveries / 500)
        while len(found) < deliveries and time.monotonic() <= deadline:
            self.access.poll()
            receipts = self.access.runs[name]
            count_deliveries(receipts[read:], expected, found)
            read = len(receipts)
            await asyncio.sleep(0.1)
        if len(found) < deliveries:
            log.warning("%s: %d of %d deliveries arrived", name, len(found), deliveries)
        await system.stop()
        return found, publish_ms

    async def measure(self, sizes: Sizes) -> dict[str, Any]:
        kinds = {"w": sizes.narrow, "W": sizes.wide, "F": sizes.wide}  # F: the wide, filtered
        orgs = {k: await self.endpoints(k, 1, width, k == "F") for k, width in kinds.items()}
        runs: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
        for number in range(sizes.rounds):
            for kind in list(kinds)[number % 3 :] + list(kinds)[: number % 3]:
                width, count = kinds[kind], sizes.deliveries // kinds[kind]
                found, _ = await self.drain(kind, orgs[kind], width, count)
                row: dict[str, Any] = {"endpoints": width, "filtered": kind == "F", "events": count}
                row |= {"delivered": len(found), **rate_summary([*found.values()])}
                runs[kind].append(row)
                log.info("fanout %s, round %d: %s/s", kind, number, row["rate_per_s"])
        cold = await self.endpoints("cold", sizes.orgs, sizes.per_org, False)
        found, publish_ms = await self.drain("cold", cold, sizes.per_org, 1, cold=True)
        first_ms = min((r.at_ms for r in found.values()), default=None)
        rates = {k: [r["rate_per_s"] for r in found] for k, found in runs.items()}
        wide, filtered = ratios(rates["W"], rates["w"]), ratios(rates["F"], rates["W"])
        return {
            "rows": [median_run(found, "rate_per_s", True) for found in runs.values()],
            "round_ratios": wide,
            "ratio": median_of(wide),
            "filtered_round_ratios": filtered,
            "filtered_ratio": median_of(filtered),
            "cold": {
                "endpoints": len(cold) * sizes.per_org,
                "delivered": len(found),
                "first_s": None if first_ms is None else round((first_ms - publish_ms) / 1000, 3),
            },
        }


async def run(run: Run) -> dict[str, Any]:
    sizes = SMOKE if run.smoke else FULL
    receiver = Receiver(run.workdir, buffered=not run.smoke, ports=sizes.ports, name="fanout")
    env = {"SVC_DELIVERY_TIMEOUT": "1s" if run.smoke else "10s"}
    system = ServiceSystem(run.procs, run.stores, 1, "fanout", env, scheduler=False)
    async with receiver, system.opened():
        fanout = Fanout(system, receiver, AccessLog(receiver.log_path))
        return {**await fanout.measure(sizes), "sizes": asdict(sizes)}


def targets(result: dict[str, Any] | None) -> list[Goal]:
    """Named by the full run's sizes, so a smoke run's targets keep the recorded names."""
    result = result or {}
    wide = f"{FULL.wide} endpoints ÷ {FULL.narrow} endpoints, deliveries/s, 1 dispatcher"
    cold = f"{FULL.orgs * FULL.per_org:,} endpoints, cache cold, first delivery after the publish"
    return [
        goal(f"100 endpoints point: {wide} end to end", result.get("ratio"), "≥ 0.9"),
        goal(
            f"{FULL.wide} endpoints with a payload filter each ÷ {FULL.wide} without, "
            "deliveries/s, 1 dispatcher end to end",
            result.get("filtered_ratio"),
            "≥ 0.9",
        ),
        goal(f"100 endpoints point: {cold}, s", result.get("cold", {}).get("first_s"), "≤ 2"),
    ]


def markdown(result: dict[str, Any] | None) -> list[str]:
    if not result:
        return []
    cold = result["cold"]
    shown = [1.0, result["ratio"], result["filtered_ratio"]]
    rows = [
        [row["endpoints"], "yes" if row["filtered"] else "no", fmt(row["events"])]
        + [fmt(row["delivered"]), fmt(row["rate_per_s"]), fmt(ratio, 2)]
        for row, ratio in zip(result["rows"], shown, strict=True)
    ]
    rounds = " · ".join(f"{r:.2f}" for r in result["round_ratios"])
    filtered = " · ".join(f"{r:.2f}" for r in result["filtered_round_ratios"])
    return [
        f"**Wide fan-out**: one organisation's endpoints on {result['sizes']['ports']} receiver "
        f"ports, one dispatcher, a backlog of events end to end; the rounds' wide ÷ narrow: "
        f"{rounds}; filtered ÷ wide: {filtered}. A filtered endpoint has a "
        "condition of its own that every event meets; ratio: to the row above. **Cold endpoint "
        f"cache**: a dispatcher just started over {fmt(cold['endpoints'])} endpoints, one event "
        f"per organisation published at once: {fmt(cold['delivered'])} deliveries, the first "
        f"{fmt(cold['first_s'], 3)} s after the start of that publish.",
        "",
        *table("endpoints | filter | events | deliveries | deliveries/s | ratio", rows),
    ]
