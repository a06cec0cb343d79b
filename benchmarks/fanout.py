"""Wide fan-out: one organisation's 100 endpoints against 10, and 100 endpoints each with a
payload filter of its own (every one met) against the 100 without, end to end through one
dispatcher, in rounds rotating which goes first; and 10,000 endpoints of 1,000
organisations with the dispatcher's endpoint cache cold, timed from one publish of an event
per organisation. Both on the section's own receiver of 10 ports, whose log counts a
delivery per signed 2xx of an (event id, path).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from contextlib import AsyncExitStack
from dataclasses import asdict, dataclass
from typing import Any

from benchmarks.figures import fmt, median_ratio, median_run, ratios
from benchmarks.receipts import AccessLog, Receipt, rate_summary
from benchmarks.runs import cpu_per
from benchmarks.sections import Goal, Run, goal, table
from benchmarks.service import ServiceSystem, store_events
from benchmarks.workload import EVENT_TYPE, paced, payment_event
from harness.nginx import Receiver
from harness.sampling import CpuTrace
from svc.orgs import Scope
from svc.webhooks.model import Options

log = logging.getLogger(__name__)

KEY = "fanout"
CPU = "cpu_us_per_delivery_dispatcher"
COLD = ("organisations", "endpoints", "delivered", "first_s", "all_done_s")
Delivered = dict[tuple[str, str], Receipt]
"""The first signed 2xx of each (event id, path): one delivery each."""


@dataclass(frozen=True, slots=True)
class Sizes:
    wide: int = 100
    narrow: int = 10
    ports: int = 10
    """Receiver ports the endpoints are spread over."""
    deliveries: int = 50_000
    """Deliveries of each row in each round (events: this over its endpoints)."""
    rounds: int = 3
    """Each of the three rows goes first in one round."""
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
        if receipt.ok and receipt.event_id in expected:
            key = (receipt.event_id, receipt.path)
            again += key in into
            into.setdefault(key, receipt)
    return again


def port_of(org: int, endpoint: int, per_org: int, ports: int) -> int:
    """The receiver port of endpoint ``endpoint`` of organisation ``org``: every endpoint in
    turn over the ports, so each port takes an even share."""
    return (org * per_org + endpoint) % ports


async def endpoints(
    system: ServiceSystem,
    receiver: Receiver,
    name: str,
    orgs: int,
    per_org: int,
    ports: int,
    filtered: bool = False,
) -> list[str]:
    """``orgs`` organisations with ``per_org`` endpoints each at paths under ``/name/``,
    subscribed to the workload's event type, 500 per transaction; the organisations' ids.
    ``filtered``: each endpoint has a filter of its own that every event of the run meets."""
    ids = await asyncio.gather(*(system.organisation(f"{name}o{i}") for i in range(orgs)))
    urls = [
        (org, receiver.url(f"/{name}/o{i}e{j}", port_of(i, j, per_org, ports)))
        for i, org in enumerate(ids)
        for j in range(per_org)
    ]
    for start in range(0, len(urls), 500):
        async with system.ctx.unit() as unit:
            for n, (org, url) in enumerate(urls[start : start + 500], start):
                condition = {"data.amount": {"$gte": n}, "data.currency": "CHF"}
                options = Options(filter=condition if filtered else None)
                scope = Scope(org, "test")
                await system.ctx.endpoints.create(unit, scope, url, [EVENT_TYPE], "", options)
    return list(ids)


async def drain(
    system: ServiceSystem,
    log_: AccessLog,
    name: str,
    orgs: list[str],
    width: int,
    count: int,
    cold: bool = False,
) -> tuple[Delivered, int, CpuTrace, float]:
    """``count`` events of each of ``orgs`` (``width`` endpoints each under ``/name/``) stored
    and published to the events exchange, with the dispatcher started after (a backlog) or,
    ``cold``, before; the deliveries, how many came again, the dispatcher's CPU and when the
    publish began (unix ms)."""
    made = [(payment_event(seq), org) for seq in range(count) for org in orgs]
    await store_events(system.ctx, made, outbox=False)
    if cold:
        await system.start()
    publish_ms = time.time() * 1000
    await paced(len(made), 0, lambda seq: system.ctx.broker.event(*made[seq]))
    if not cold:
        await system.spawn()
    trace = CpuTrace({"dispatcher": system.cpu_groups()["dispatcher"]})
    trace.sample()
    await system.ready()
    expected, deliveries = {e.id for e, _ in made}, len(made) * width
    found: Delivered = {}
    again, read = 0, 0
    deadline = time.monotonic() + max(30.0, deliveries / 500)
    while len(found) < deliveries and time.monotonic() <= deadline:
        trace.sample()
        log_.poll()
        receipts = log_.runs[name]
        again += count_deliveries(receipts[read:], expected, found)
        read = len(receipts)
        await asyncio.sleep(0.1)
    trace.sample()  # brackets the receipts of the last poll
    if len(found) < deliveries:
        log.warning("%s: %d of %d deliveries arrived", name, len(found), deliveries)
    await system.stop()
    return found, again, trace, publish_ms


async def run(run: Run) -> dict[str, Any]:
    sizes = SMOKE if run.smoke else FULL
    receiver = Receiver(run.workdir, buffered=not run.smoke, ports=sizes.ports, name="fanout")
    env = {"SVC_DELIVERY_TIMEOUT": "1s" if run.smoke else "10s"}
    system = ServiceSystem(run.procs, run.stores, 1, "fanout", env, scheduler=False)
    async with receiver, AsyncExitStack() as stack:
        stack.push_async_callback(system.close)
        await system.open()
        return {**await _measure(system, receiver, sizes), "sizes": asdict(sizes)}


async def _measure(system: ServiceSystem, receiver: Receiver, sizes: Sizes) -> dict[str, Any]:
    access = AccessLog(*receiver.log_paths)
    kinds = {"w": sizes.narrow, "W": sizes.wide, "F": sizes.wide}  # F: the wide one, filtered
    orgs = {
        k: await endpoints(system, receiver, k, 1, width, sizes.ports, filtered=k == "F")
        for k, width in kinds.items()
    }
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
    for number in range(sizes.rounds):
        order = list(kinds)[number % 3 :] + list(kinds)[: number % 3]
        for kind in order:
            width, count = kinds[kind], sizes.deliveries // kinds[kind]
            found, again, trace, _ = await drain(system, access, kind, orgs[kind], width, count)
            receipts = list(found.values())
            row: dict[str, Any] = {"endpoints": width, "events": count, "delivered": len(found)}
            row |= {"filtered": kind == "F", "duplicates": again, **rate_summary(receipts)}
            runs[kind].append(row | cpu_per(trace, receipts, "delivery"))
            log.info(
                "fanout %s %d endpoints, round %d: %s/s", kind, width, number, row["rate_per_s"]
            )
    cold = await endpoints(system, receiver, "cold", sizes.orgs, sizes.per_org, sizes.ports)
    found, again, _, publish_ms = await drain(
        system, access, "cold", cold, sizes.per_org, 1, cold=True
    )
    times = [r.at_ms for r in found.values()]
    rates = {k: [r["rate_per_s"] for r in found] for k, found in runs.items()}
    return {
        "rows": [median_run(found, "rate_per_s", True) for found in runs.values()],
        "round_ratios": ratios(rates["W"], rates["w"]),
        "ratio": median_ratio(rates["W"], rates["w"]),
        "filtered_round_ratios": ratios(rates["F"], rates["W"]),
        "filtered_ratio": median_ratio(rates["F"], rates["W"]),
        "cold": {
            "organisations": len(cold),
            "endpoints": len(cold) * sizes.per_org,
            "delivered": len(found),
            "duplicates": again,
            "first_s": round((min(times) - publish_ms) / 1000, 3) if times else None,
            "all_done_s": round((max(times) - publish_ms) / 1000, 3) if times else None,
        },
    }


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
    shown = [1.0, result["ratio"], result.get("filtered_ratio")]
    rows = [
        [row["endpoints"], "yes" if row.get("filtered") else "no", fmt(row["events"])]
        + [fmt(row["delivered"]), fmt(row["rate_per_s"]), fmt(ratio, 2), fmt(row.get(CPU))]
        for row, ratio in zip(result["rows"], shown, strict=False)
    ]
    rounds = " · ".join(f"{r:.2f}" for r in result["round_ratios"])
    filtered = " · ".join(f"{r:.2f}" for r in result.get("filtered_round_ratios", []))
    return [
        f"**Wide fan-out**: one organisation's endpoints on {result['sizes']['ports']} receiver "
        f"ports, one dispatcher, a backlog of events end to end; the rounds' wide ÷ narrow: "
        f"{rounds}; filtered ÷ wide: {filtered or 'not run'}. A filtered endpoint has a "
        "condition of its own (`data.amount` at least its number, `data.currency` CHF) that "
        "every event meets, so both wide rows make the same deliveries; ratio: to the row above.",
        "",
        *table(
            "endpoints | filter | events | deliveries | deliveries/s | ratio | CPU µs per delivery",
            rows,
        ),
        "**Cold endpoint cache**: a dispatcher just started, one event per organisation "
        "published at once; times from the start of that publish.",
        "",
        *table(
            "organisations | endpoints | deliveries | first delivery, s | all done, s",
            [[fmt(cold[k], 3 if k.endswith("_s") else 0) for k in COLD]],
        ),
    ]
