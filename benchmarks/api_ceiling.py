"""Payment creation by ``svc api`` against the naive API at 32 and 128 in flight, rounds
alternating which goes first; rate limiting's cost (a live key counted, far above the rate,
against a test key not counted), rounds alternating too; then every ``payment.created``
delivered.

The naive API (``python -m benchmarks.api_ceiling PORT DATABASE_URL AMQP_URL QUEUE``) is the
least a payment creation can do: one handler that runs one ``INSERT`` in a transaction and
publishes one message with a confirm; no key, rate limit, idempotency, event or outbox.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
import uuid
from datetime import UTC, datetime
from typing import Any

import aio_pika
import asyncpg
import orjson
from aiohttp import web

from benchmarks.figures import fmt, median_run
from benchmarks.payments import delivered, post_payments, posted_row, rate_limit_cost, shop
from benchmarks.sections import Goal, Run, goal, table
from benchmarks.service import ServiceSystem
from benchmarks.workload import run_fast
from harness.cleanup import delete_queues
from harness.ports import free_port, wait_port
from harness.receivers import serve_locally

KEY = "api-ceiling"

CONCURRENCIES = (32, 128)
TARGET = 0.7
RATE_LIMIT = 0.95
NAIVE = "naive API"
SERVICE = "svc api"
RECEIVER_PATH = "apiceiling"
LIVE_LIMIT = "1000000"  # requests a second of a live key: counted, never refused
TABLE = "naive_api_payments"


async def run(run: Run) -> dict[str, Any]:
    count, rounds, warm_up = (30, 1, 10) if run.smoke else (3000, 3, 300)
    limit_rounds = 1 if run.smoke else 9  # the cost is a few per cent; a round swings more
    env = {"SVC_RATE_LIMIT_LIVE": LIVE_LIMIT, "SVC_RATE_LIMIT_TEST": "0"}
    system = ServiceSystem(run.procs, run.stores, 0, "apiceiling", env, scheduler=False, api=True)
    port, queue = free_port(), f"bench{uuid.uuid4().hex[:10]}.naiveapi"
    naive_url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", __name__, str(port), run.stores.database_url]
    naive = run.procs.start("naive-api", [*command, run.stores.amqp_url, queue])
    try:
        await system.open()
        key, org = await shop(system, run.bench, RECEIVER_PATH, "live")
        await system.start()
        await wait_port(port, 30, naive)  # it listens once connected to both stores
        for url in (naive_url, system.api_url):  # pools open, key cached, endpoint cached
            for concurrency in CONCURRENCIES:
                await post_payments(url, key, warm_up, concurrency)
        runs: list[dict[str, Any]] = []
        created: list[str] = []
        for round_ in range(rounds):
            for concurrency in CONCURRENCIES:
                for name in [NAIVE, SERVICE] if round_ % 2 == 0 else [SERVICE, NAIVE]:
                    url = naive_url if name == NAIVE else system.api_url
                    posted, wall = await post_payments(url, key, count, concurrency)
                    row = posted_row(posted, wall)
                    runs.append({"system": name, "concurrency": concurrency, **row})
                    if name == SERVICE:
                        created += [p.payment_id for p in posted if p.payment_id]
        limits = await rate_limit_cost(system, count, CONCURRENCIES[0], limit_rounds)
        await system.spawn("scheduler", "dispatcher0")
        await system.ready()
        arrived = await delivered(run.bench, system, RECEIVER_PATH, org, created)
    finally:
        await run.procs.stop(naive, grace=5)
        await delete_queues(run.stores.amqp_url, [queue])
        await system.close()
    rows: dict[str, dict[str, Any]] = {}
    ratio: dict[str, float | None] = {}
    for c in CONCURRENCIES:
        for name in (NAIVE, SERVICE):
            found = [r for r in runs if r["system"] == name and r["concurrency"] == c]
            rows[f"{name}@{c}"] = median_run(found, "rate_per_s", True)
        service, naive_rate = (rows[f"{name}@{c}"]["rate_per_s"] for name in (SERVICE, NAIVE))
        ratio[str(c)] = round(service / naive_rate, 3) if naive_rate else None
    return {
        "count": count,
        "rounds": rounds,
        "rows": rows,
        "ratio": ratio,
        "rate_limit": limits,
        "created": len(created),
        "delivered": len(arrived),
        "missing": len(created) - len(arrived),
    }


def targets(result: dict[str, Any] | None) -> list[Goal]:
    ratio = (result or {}).get("ratio", {})
    missing = None if result is None or "missing" not in result else float(result["missing"])
    limited = ((result or {}).get("rate_limit") or {}).get("limited_ratio")
    return [
        *(
            goal(f"payment creation ÷ {NAIVE}, {c} in flight", ratio.get(str(c)), f"≥ {TARGET}")
            for c in CONCURRENCIES
        ),
        goal(f"payment.created missing ({NAIVE} run)", missing, "= 0"),
        goal("payment creation with per-key rate limiting on ÷ off", limited, f"≥ {RATE_LIMIT}"),
    ]


def markdown(result: dict[str, Any] | None) -> list[str]:
    if not result or not result.get("rows"):
        return []
    rows = []
    for key, row in result["rows"].items():
        name, concurrency = key.split("@")
        ratio = 1.0 if name == NAIVE else result["ratio"][concurrency]
        rows.append([name, concurrency, fmt(row["rate_per_s"]), fmt(ratio, 2), row["p99_ms"]])
    limits = result.get("rate_limit") or {}  # a run recorded before it was measured here
    return [
        f"**Payment creation against the naive API**: {result['count']:,} payments per run, "
        f"{result['rounds']} rounds, each row the median run; {result['delivered']:,} of "
        f"{result['created']:,} `payment.created` delivered. Rate limiting, medians of "
        f"alternating rounds at {CONCURRENCIES[0]} in flight: "
        f"{fmt(limits.get('limited_per_s'))}/s counted against "
        f"{fmt(limits.get('unlimited_per_s'))}/s not.",
        "",
        *table("system | in flight | payments/s | ÷ naive API | p99 ms", rows),
    ]


async def serve(port: int, database_url: str, amqp_url: str, queue: str) -> None:
    """The naive API, until killed."""
    pool = await asyncpg.create_pool(database_url, min_size=10, max_size=10)  # svc's default
    await pool.execute(  # in the run's own database, dropped with it
        f"CREATE TABLE IF NOT EXISTS {TABLE} (id text PRIMARY KEY, amount bigint NOT NULL, "
        "currency text NOT NULL, channel text NOT NULL, success_url text NOT NULL, "
        "created_at timestamptz NOT NULL)"
    )
    connection = await aio_pika.connect(amqp_url)
    channel = await connection.channel(publisher_confirms=True)
    await channel.declare_queue(queue, durable=True)

    async def create(request: web.Request) -> web.Response:
        form = await request.post()
        now = datetime.now(UTC)
        payment = {
            "id": "pay_" + secrets.token_hex(12),
            "object": "payment",
            "amount": int(str(form["amount"])),
            "currency": str(form.get("currency", "CHF")),
            "channel": str(form.get("channel", "online")),
            "success_url": str(form["success_url"]),
            "status": "pending",
            "created_at": now.isoformat(),
        }
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute(
                f"INSERT INTO {TABLE} (id, amount, currency, channel, success_url, created_at) "
                "VALUES ($1, $2, $3, $4, $5, $6)",
                *(payment[c] for c in ("id", "amount", "currency", "channel", "success_url")),
                now,
            )
        body = orjson.dumps(payment)
        message = aio_pika.Message(body, delivery_mode=aio_pika.DeliveryMode.PERSISTENT)
        await channel.default_exchange.publish(message, routing_key=queue)
        return web.Response(body=body, status=201, content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/payments", create)
    await serve_locally(app, port)
    await asyncio.Future()


if __name__ == "__main__":
    run_fast(serve(int(sys.argv[1]), *sys.argv[2:5]))
