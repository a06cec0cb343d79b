"""Payment to webhook: from the client reading the API's 201 for a payment to the receiver
logging its ``payment.created`` webhook (nginx ``$msec``, the same machine's clock), payments
created at half the capacity one ``svc api`` showed just before, each on its own schedule.
That capacity run (payments created as fast as 32 clients can) also counts its webhooks.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from benchmarks.figures import fmt
from benchmarks.payments import delivered, post_payments, posted_row, shop
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
    system, bench = ServiceSystem(run.procs, run.stores, 1, "wlat", api=True), run.bench
    async with system.opened():
        key, org = await shop(system, bench, "wlat")
        await system.start()
        # A warm-up, then the API's capacity, then the paced run once every webhook arrived.
        count, warm_up = (40, 8) if run.smoke else (3_000, 100)
        posted, _ = await post_payments(system.api_url, key, warm_up, CAPACITY_CONCURRENCY)
        made = [p.payment_id for p in posted if p.payment_id]
        if len(made) < warm_up or len(await delivered(bench, system, "wlat", org, made)) < warm_up:
            raise RuntimeError("webhook latency: warm-up payments or their webhooks failed")
        posted, wall = await post_payments(system.api_url, key, count, CAPACITY_CONCURRENCY)
        made = [p.payment_id for p in posted if p.payment_id]
        if not made:
            raise RuntimeError("webhook latency: no capacity payment was created")
        unsent = len(made) - len(await delivered(bench, system, "wlat", org, made))
        capacity = posted_row(posted, wall)["rate_per_s"]
        rate, seconds = capacity / 2, 2.0 if run.smoke else 60.0
        load, stop = Load(system.api_url, key, rate, "wlat"), asyncio.Event()
        asyncio.get_running_loop().call_later(seconds, stop.set)
        await load.run(stop, finish_within=30)
        wall = time.time() - time.monotonic()  # the load's monotonic clock on the wall clock
        answered = {
            r.payment_id: (r.accepted + wall) * 1000
            for r in load.requests
            if r.payment_id and r.accepted
        }
        arrived = await delivered(bench, system, "wlat", org, list(answered))
    found = latencies(answered, arrived)
    return {
        "capacity_per_s": round(capacity, 1),
        "capacity_created": len(made),
        "capacity_missing": unsent,
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
    unsent = "payment creation: payment.created webhooks missing"
    return [
        goal(unsent, result.get("capacity_missing"), "0"),
        goal(name, result.get("p99_ms"), f"≤ {TARGET_P99_MS:g}"),
        goal("payment to webhook: webhooks missing", result.get("missing"), "0"),
    ]


def markdown(result: dict[str, Any] | None) -> list[str]:
    if not result:
        return []
    created = result.get("capacity_created")  # a run recorded before it was counted here
    return [
        f"**Payment to webhook**: `POST /v1/payments` at {result['rate_per_s']:,.0f}/s for "
        f"{result['seconds']:g} s, half of the {result['capacity_per_s']:,.0f}/s one `svc api` "
        f"answered at {CAPACITY_CONCURRENCY} in flight just before ({fmt(created)} payments, "
        f"{fmt(result.get('capacity_missing'))} webhooks missing); from the 201 read to the "
        f"webhook received, p50 {fmt(result['p50_ms'], 1)} ms, p99 {fmt(result['p99_ms'], 1)} "
        f"ms, max {fmt(result['max_ms'], 1)} ms over {result['created']:,} payments, "
        f"{result['before_201']:,} of them negative (the webhook before the 201); "
        f"{result['missing']:,} webhooks missing.",
        "",
    ]
