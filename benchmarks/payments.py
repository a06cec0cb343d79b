"""Payment creation: ``POST /v1/payments`` at a fixed concurrency against one ``svc api``
process, with a scheduler and a dispatcher delivering every ``payment.created``; and the
helpers the API's sections share.

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

from benchmarks.receipts import Receipt, lag_summary, spread
from benchmarks.runs import Bench, patience_for
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


def posted_row(posted: list[Posted], wall: float, cpu: dict[str, float]) -> dict[str, Any]:
    """Payments created, their rate over ``wall``, POST latency and CPU µs per payment."""
    made = sum(1 for p in posted if p.status == 201)
    ms = spread([p.seconds * 1000 for p in posted])
    return {
        "requests": len(posted),
        "created": made,
        "rate_per_s": round(made / wall, 1) if wall > 0 else 0.0,
        "p50_ms": ms["p50_ms"],
        "p99_ms": ms["p99_ms"],
        "max_ms": ms["max_ms"],
        **{
            f"cpu_us_per_payment_{g}": round(s * 1e6 / made) if made else None
            for g, s in cpu.items()
        },
    }


async def shop(
    system: ServiceSystem, bench: Bench, name: str, env: str = "test"
) -> tuple[str, str]:
    """A key of a new organisation whose one endpoint takes ``payment.created`` under the
    receiver path ``/<name>/``; returns the key and the organisation id."""
    key, scope = await system.ctx.api_keys.create(env, f"{system.name}-{name}")
    await system.subscribe(scope.org, bench.receiver.url(f"/{name}/e0"), [WEBHOOK], env)
    return key, scope.org


async def delivered(
    bench: Bench, system: ServiceSystem, run: str, org: str, ids: list[str]
) -> tuple[dict[str, tuple[str, int]], dict[str, Receipt]]:
    """Wait for the webhooks of payments ``ids`` under ``/<run>/``; payment id → (event id,
    creation ms) of every ``payment.created`` of ``org``, and the receipts that arrived."""
    rows = await system.ctx.db.fetch(
        "SELECT id, created_at, body FROM events WHERE org_id = $1 AND type = $2", org, WEBHOOK
    )
    events = {
        orjson.loads(bytes(row["body"]))["data"]["id"]: (row["id"], to_ms(row["created_at"]))
        for row in rows
    }
    expected = {events[p][0] for p in ids if p in events}
    return events, await bench.wait(run, expected, patience_for(len(expected), 60))


async def payments(
    bench: Bench,
    system: ServiceSystem,
    count: int,
    concurrency: int,
    warm_up: int,
    run: str = "payments",
) -> dict[str, Any]:
    """Start the system and create ``count`` payments, ``concurrency`` requests in flight,
    after ``warm_up`` more, each with its webhook under ``/<run>/``: the POST latency,
    payments/s, CPU per payment and the webhooks that arrived."""
    warm_key, warm_org = await shop(system, bench, f"{run}warm")
    key, org = await shop(system, bench, run)
    await system.start()
    posted, _ = await post_payments(system.api_url, warm_key, warm_up, concurrency)
    made = [p.payment_id for p in posted if p.payment_id]
    _, arrived = await delivered(bench, system, f"{run}warm", warm_org, made)
    if len(made) < warm_up or len(arrived) < len(made):
        raise RuntimeError(f"{system.name}: warm-up payments or their webhooks failed")
    log.info("%s: warmed up; creating %d at concurrency %d", run, count, concurrency)
    trace = CpuTrace(bench.cpu_groups(system, nginx=False))
    trace.sample()
    posted, wall = await post_payments(system.api_url, key, count, concurrency)
    trace.sample()
    ids = [p.payment_id for p in posted if p.payment_id]
    events, arrived = await delivered(bench, system, run, org, ids)
    lags = lag_summary({e: ms for e, ms in events.values()}, arrived)
    return {
        "system": "svc-api-payments",
        "label": system.label,
        "concurrency": concurrency,
        **posted_row(posted, wall, trace.spent()),
        "statuses": dict(Counter(str(p.status) for p in posted)),
        "delivered": sum(1 for p in ids if p in events and events[p][0] in arrived),
        "duration_s": round(wall, 3),
        **{f"webhook_{k}": v for k, v in lags.items()},
    }


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
            rates[name].append(posted_row(posted, wall, {})["rate_per_s"])
    off, on = statistics.median(rates["off"]), statistics.median(rates["on"])
    return {
        "rounds": rounds,
        "requests": count,
        "statuses": dict(statuses),
        "unlimited_per_s": round(off, 1),
        "limited_per_s": round(on, 1),
        "limited_ratio": round(on / off, 3) if off else None,
        "runs_per_s": rates,
    }
