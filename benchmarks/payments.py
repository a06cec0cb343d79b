"""What the API's sections share: payments posted by concurrent clients (each request with its
own ``Idempotency-Key``, so every one creates a payment), a shop whose endpoint takes their
webhooks, the webhooks that arrived, and rate limiting's cost."""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from benchmarks.receipts import Receipt, spread
from benchmarks.runs import Bench, patience_for
from benchmarks.service import ServiceSystem
from harness.load import BODY, CONTENT_TYPE, PATH

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
    """``count`` payments by ``concurrency`` clients in turn; every request and the wall time."""
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


def posted_row(posted: list[Posted], wall: float) -> dict[str, Any]:
    """Payments created, their rate over ``wall`` and POST latency."""
    made = sum(1 for p in posted if p.status == 201)
    return {
        "requests": len(posted),
        "created": made,
        "rate_per_s": round(made / wall, 1) if wall > 0 else 0.0,
        **spread([p.seconds * 1000 for p in posted]),
    }


async def shop(
    system: ServiceSystem, bench: Bench, name: str, env: str = "test"
) -> tuple[str, str]:
    """A key and the id of a new organisation with a ``payment.created`` endpoint at ``name``."""
    key, scope = await system.ctx.api_keys.create(env, f"{system.name}-{name}")
    await system.subscribe(scope.org, bench.receiver.url(f"/{name}/e0"), [WEBHOOK], env)
    return key, scope.org


async def delivered(
    bench: Bench, system: ServiceSystem, run: str, org: str, ids: list[str]
) -> dict[str, Receipt]:
    """The webhooks of payments ``ids`` of ``org`` that arrived under ``/<run>/``, by payment."""
    rows = await system.ctx.db.fetch(
        "SELECT id, body FROM events WHERE org_id = $1 AND type = $2", org, WEBHOOK
    )
    events = {orjson.loads(bytes(row["body"]))["data"]["id"]: row["id"] for row in rows}
    expected = {events[p]: p for p in ids if p in events}
    arrived = await bench.wait(run, set(expected), patience_for(len(expected), 60))
    return {expected[event]: receipt for event, receipt in arrived.items()}


async def rate_limit_cost(
    system: ServiceSystem, count: int, concurrency: int, rounds: int
) -> dict[str, Any]:
    """Payment rates with the per-key rate limit on (a live key, far above the rate) and off."""
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
            rates[name].append(posted_row(posted, wall)["rate_per_s"])
    off, on = statistics.median(rates["off"]), statistics.median(rates["on"])
    return {
        "statuses": dict(statuses),
        "unlimited_per_s": round(off, 1),
        "limited_per_s": round(on, 1),
        "limited_ratio": round(on / off, 3) if off else None,
    }
