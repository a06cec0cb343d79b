"""Payment to webhook: from the client reading the API's 201 for a payment to the receiver
logging its ``payment.created`` webhook (nginx ``$msec``, the same machine's clock), payments
created at half the capacity one ``svc api`` showed just before, each on its own schedule.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from benchmarks.figures import fmt
from benchmarks.payments import delivered, payments, shop
from benchmarks.receipts import Receipt, spread
from benchmarks.sections import Goal, Run, goal
from benchmarks.service import ServiceSystem
from harness.load import Load

KEY = "webhook-latency"
TARGET_P99_MS = 25.0
CAPACITY_CONCURRENCY = 32


def latencies(answered: dict[str, float], arrived: dict[str, Receipt]) -> list[float]:
    """Milliseconds from each payment's 201 (``answered``, wall clock ms) to its webhook."""
    return [arrived[p].at_ms - ms for p, ms in answered.items() if p in arrived]


async def run(run: Run) -> dict[str, Any]:
    system = ServiceSystem(run.procs, run.stores, 1, "wlat", api=True)
    try:
        await system.open()
        # The API's capacity; the paced run starts once every webhook of it arrived.
        count, warm_up = (40, 8) if run.smoke else (3_000, 100)
        made = await payments(run.bench, system, count, CAPACITY_CONCURRENCY, warm_up, "wlatcap")
        if not made["created"] or made["delivered"] < made["created"]:
            raise RuntimeError("webhook latency: capacity payments or their webhooks failed")
        capacity = made["rate_per_s"]
        rate, seconds = capacity / 2, 2.0 if run.smoke else 60.0
        key, org = await shop(system, run.bench, "wlat")
        load, stop = Load(system.api_url, key, rate, "wlat"), asyncio.Event()
        sending = asyncio.create_task(load.run(stop, finish_within=30))
        await asyncio.sleep(seconds)
        stop.set()
        await sending
        wall = time.time() - time.monotonic()  # the load's monotonic clock on the wall clock
        answered = {
            r.payment_id: (r.accepted + wall) * 1000
            for r in load.requests
            if r.payment_id and r.accepted
        }
        arrived = await delivered(run.bench, system, "wlat", org, list(answered))
    finally:
        await system.close()
    found = latencies(answered, arrived)
    return {
        "capacity_per_s": round(capacity, 1),
        "rate_per_s": round(rate, 1),
        "seconds": seconds,
        "created": len(answered),
        "missing": len(answered) - len(found),
        "before_201": sum(1 for ms in found if ms < 0),
        **spread(found),
    }


def targets(result: dict[str, Any] | None) -> list[Goal]:
    result = result or {}
    name = "payment to webhook p99 (201 to receipt, at half the API's capacity), ms"
    return [
        goal(name, result.get("p99_ms"), f"≤ {TARGET_P99_MS:g}"),
        goal("payment to webhook: webhooks missing", result.get("missing"), "0"),
    ]


def markdown(result: dict[str, Any] | None) -> list[str]:
    if not result:
        return []
    return [
        f"**Payment to webhook**: `POST /v1/payments` at {result['rate_per_s']:,.0f}/s for "
        f"{result['seconds']:g} s, half of the {result['capacity_per_s']:,.0f}/s one `svc api` "
        f"answered at {CAPACITY_CONCURRENCY} in flight just before; from the 201 read to the "
        f"webhook received, p50 {fmt(result['p50_ms'], 1)} ms, p99 {fmt(result['p99_ms'], 1)} "
        f"ms, max {fmt(result['max_ms'], 1)} ms over {result['created']:,} payments, "
        f"{result['before_201']:,} of them negative (the webhook before the 201); "
        f"{result['missing']:,} webhooks missing.",
        "",
    ]
