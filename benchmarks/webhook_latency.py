"""Payment to webhook: from the client reading the API's 201 for a payment to the receiver
logging its ``payment.created`` webhook (nginx ``$msec``, the same machine's clock), with
payments created at half the capacity one ``svc api`` showed just before, each request on its
own schedule; split at the event's creation.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Any

from benchmarks.figures import fmt
from benchmarks.payments import delivered, payments, shop
from benchmarks.receipts import Receipt, spread
from benchmarks.sections import Goal, Run, goal, table
from benchmarks.service import ServiceSystem
from harness.load import Load

KEY = "webhook-latency"
log = logging.getLogger(__name__)

TARGET_P99_MS = 25.0
CAPACITY_CONCURRENCY = 32


def latencies(
    answered: dict[str, float], events: dict[str, tuple[str, int]], arrived: dict[str, Receipt]
) -> dict[str, list[float]]:
    """Per payment whose webhook arrived, in milliseconds: 201 → receipt (the measure), event
    created → 201 and event created → receipt; ``answered`` holds when each payment's 201 was
    read (wall clock, ms)."""
    found: dict[str, list[float]] = {"webhook": [], "created_to_201": [], "created_to_receipt": []}
    for payment_id, answered_ms in answered.items():
        event_id, created_ms = events.get(payment_id, ("", 0))
        receipt = arrived.get(event_id)
        if receipt is not None:
            found["webhook"].append(receipt.at_ms - answered_ms)
            found["created_to_201"].append(answered_ms - created_ms)
            found["created_to_receipt"].append(receipt.at_ms - created_ms)
    return found


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
        load_before = os.getloadavg()[0]
        log.info("webhook latency: capacity %.0f/s; payments at %.0f/s", capacity, rate)
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
        ids = list(answered)
        events, arrived = await delivered(run.bench, system, "wlat", org, ids)
    finally:
        await system.close()
    found = latencies(answered, events, arrived)
    return {
        "capacity_per_s": round(capacity, 1),
        "capacity_concurrency": CAPACITY_CONCURRENCY,
        "rate_per_s": round(rate, 1),
        "sent": len(load.requests),
        "seconds": seconds,
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
        "created": len(ids),
        "delivered": len(found["webhook"]),
        "missing": len(ids) - len(found["webhook"]),
        "before_201": sum(1 for ms in found["webhook"] if ms < 0),
        **spread(found["webhook"]),
        "stages": {name: spread(found[name]) for name in ("created_to_201", "created_to_receipt")},
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

    def ms(found: dict[str, Any]) -> list[str]:
        return [fmt(found[k], 1) for k in ("p50_ms", "p99_ms", "max_ms")]

    stages = result["stages"]
    return [
        f"**Payment to webhook**: `POST /v1/payments` at {result['rate_per_s']:,.0f}/s for "
        f"{result['seconds']:g} s, half of the {result['capacity_per_s']:,.0f}/s one `svc api` "
        f"answered at {result['capacity_concurrency']} in flight just before; "
        f"{result['before_201']:,} of {result['delivered']:,} webhooks arrived before their 201 "
        f"was read (negative latency); 1-minute load {result['load_before']} before, "
        f"{result['load_after']} after.",
        "",
        *table(
            "from → to | payments | p50 ms | p99 ms | max ms | missing",
            [
                ["**201 read → webhook received**", fmt(result["created"]), *ms(result)]
                + [fmt(result["missing"])],
                ["event created → 201 read", "", *ms(stages["created_to_201"]), ""],
                ["event created → webhook received", "", *ms(stages["created_to_receipt"]), ""],
            ],
        ),
    ]
