"""Payment creation: ``POST /v1/payments`` at a fixed concurrency against one ``svc api``
process, with a scheduler and a dispatcher delivering every ``payment.created``.

Each request has its own ``Idempotency-Key``, so every one creates a payment. A payment counts
as delivered when the receiver logged a signed 2xx for its ``payment.created`` event (found in
the run's database by the payment id in its body).
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from benchmarks.receipts import Receipt, lag_summary, percentile
from benchmarks.runs import Bench
from benchmarks.service import ServiceSystem
from harness.load import BODY, CONTENT_TYPE, PATH
from harness.sampling import CpuTrace
from svc.db.times import to_ms

log = logging.getLogger(__name__)

WEBHOOK = "payment.created"


@dataclass(frozen=True, slots=True)
class Posted:
    """One ``POST /v1/payments`` as the client saw it; ``status`` 0 is a transport error."""

    status: int
    seconds: float
    payment_id: str | None


async def post_payments(
    api_url: str, key: str, count: int, concurrency: int
) -> tuple[list[Posted], float]:
    """``count`` payments created by ``concurrency`` clients, each sending its next request
    when the last one answered; every request and the wall time of all."""
    todo = iter(range(count))
    posted: list[Posted] = []
    connector = aiohttp.TCPConnector(limit=concurrency)
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(api_url, connector=connector, timeout=timeout) as session:

        async def client() -> None:
            for _ in todo:  # one shared iterator: each client takes the next request
                started = time.perf_counter()
                headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": uuid.uuid4().hex}
                headers["Content-Type"] = CONTENT_TYPE
                try:
                    async with session.post(PATH, data=BODY, headers=headers) as answer:
                        body, status = await answer.read(), answer.status
                except (aiohttp.ClientError, TimeoutError):
                    status, body = 0, b""
                made = orjson.loads(body)["id"] if status == 201 else None
                posted.append(Posted(status, time.perf_counter() - started, made))

        started = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(concurrency)))
        return posted, time.perf_counter() - started


async def created_events(system: ServiceSystem, org: str) -> dict[str, tuple[str, int]]:
    """Payment id → (event id, creation ms) of every ``payment.created`` event of ``org``."""
    rows = await system.ctx.db.fetch(
        "SELECT id, created_at, body FROM events WHERE org_id = $1 AND type = $2", org, WEBHOOK
    )
    return {
        orjson.loads(bytes(row["body"]))["data"]["id"]: (row["id"], to_ms(row["created_at"]))
        for row in rows
    }


async def shop(system: ServiceSystem, bench: Bench, name: str) -> tuple[str, str]:
    """A test key of a new organisation whose one endpoint takes ``payment.created`` under the
    receiver path ``/<name>/``; returns the key and the organisation id."""
    key, scope = await system.ctx.api_keys.create("test", f"{system.name}-{name}")
    await system.subscribe(scope.org, bench.receiver.url(f"/{name}/e0"), [WEBHOOK])
    return key, scope.org


async def delivered(
    bench: Bench, system: ServiceSystem, run: str, org: str, ids: list[str]
) -> tuple[dict[str, tuple[str, int]], dict[str, Receipt]]:
    """Wait for the webhooks of payments ``ids``; their events and the receipts that arrived."""
    events = await created_events(system, org)
    expected = {events[p][0] for p in ids if p in events}
    arrived = await bench.wait(run, expected, max(60.0, len(expected) / 100))
    return events, arrived


async def payments(
    bench: Bench, system: ServiceSystem, count: int, concurrency: int, warm_up: int
) -> dict[str, Any]:
    """Create ``count`` payments, ``concurrency`` requests in flight, after ``warm_up`` more:
    the POST latency, payments/s, CPU per payment and the webhooks that arrived."""
    warm_key, warm_org = await shop(system, bench, "paymentswarm")
    key, org = await shop(system, bench, "payments")
    await system.start()
    posted, _ = await post_payments(system.api_url, warm_key, warm_up, concurrency)
    made = [p.payment_id for p in posted if p.payment_id]
    _, arrived = await delivered(bench, system, "paymentswarm", warm_org, made)
    if len(made) < warm_up or len(arrived) < len(made):
        raise RuntimeError(f"{system.name}: warm-up payments or their webhooks failed")
    log.info("payments: warmed up; creating %d at concurrency %d", count, concurrency)
    trace = CpuTrace(bench.cpu_groups(system, nginx=False))
    trace.sample()
    posted, wall = await post_payments(system.api_url, key, count, concurrency)
    trace.sample()
    cpu = trace.spent()
    ids = [p.payment_id for p in posted if p.payment_id]
    events, arrived = await delivered(bench, system, "payments", org, ids)
    seconds = [p.seconds * 1000 for p in posted]
    lags = lag_summary({e: ms for e, ms in events.values()}, arrived)
    result: dict[str, Any] = {
        "system": "svc-api-payments",
        "label": system.label,
        "concurrency": concurrency,
        "requests": count,
        "created": len(ids),
        "statuses": dict(Counter(str(p.status) for p in posted)),
        "events": sum(1 for p in ids if p in events),
        "delivered": sum(1 for p in ids if p in events and events[p][0] in arrived),
        "duration_s": round(wall, 3),
        "rate_per_s": round(len(ids) / wall, 1) if wall > 0 else None,
        "p50_ms": round(percentile(seconds, 50), 1),
        "p99_ms": round(percentile(seconds, 99), 1),
        "max_ms": round(max(seconds, default=0.0), 1),
        **{f"webhook_{k}": v for k, v in lags.items()},
    }
    for group, used in cpu.items():
        result[f"cpu_us_per_payment_{group}"] = round(used * 1e6 / len(ids)) if ids else None
    result["counters"] = await system.counters()
    return result


async def rate_limit_cost(
    system: ServiceSystem, count: int, concurrency: int, rounds: int
) -> dict[str, Any]:
    """Payment creation with the per-key rate limit on and off, alternating which goes first
    in ``rounds`` against the same API process: a live key is limited (far above the rate, so
    it only counts), a test key is not. Neither organisation has an endpoint. Medians."""
    keys = {
        "off": (await system.ctx.api_keys.create("test", f"{system.name}-limit-off"))[0],
        "on": (await system.ctx.api_keys.create("live", f"{system.name}-limit-on"))[0],
    }
    rates: dict[str, list[float]] = {"off": [], "on": []}
    statuses: Counter[str] = Counter()
    for round_ in range(rounds):
        for name in ("off", "on") if round_ % 2 == 0 else ("on", "off"):
            posted, wall = await post_payments(system.api_url, keys[name], count, concurrency)
            statuses.update(str(p.status) for p in posted)
            created = sum(1 for p in posted if p.status == 201)
            rates[name].append(created / wall if wall > 0 else 0.0)
    off, on = statistics.median(rates["off"]), statistics.median(rates["on"])
    return {
        "rounds": rounds,
        "requests": count,
        "statuses": dict(statuses),
        "unlimited_per_s": round(off, 1),
        "limited_per_s": round(on, 1),
        "limited_ratio": round(on / off, 3) if off else None,
        "runs_per_s": {name: [round(r, 1) for r in found] for name, found in rates.items()},
    }
