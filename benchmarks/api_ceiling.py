"""Payment creation against its ceiling: ``svc api`` next to the naive API at 32 and 128
requests in flight, in rounds alternating which goes first, each alone with its database and
broker while timed; rows are medians. The service's scheduler and dispatcher then deliver
every ``payment.created`` it made (the check nothing was lost).

The naive API (``python -m benchmarks.api_ceiling PORT DATABASE_URL AMQP_URL QUEUE``) is the
least a payment creation can do with this service's libraries: one aiohttp handler on uvloop
that reads the form, runs one ``INSERT`` in a transaction, publishes one persistent message
with a confirm and answers JSON; no key check, rate limit, idempotency, event row or outbox.
"""

from __future__ import annotations

import asyncio
import logging
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
from benchmarks.payments import Posted, delivered, post_payments, posted_row, shop
from benchmarks.sections import Goal, Run, goal, table
from benchmarks.service import ServiceSystem
from benchmarks.workload import run_fast
from harness.cleanup import delete_queues
from harness.ports import free_port, wait_ready
from harness.receivers import serve_locally
from harness.sampling import CpuTrace

KEY = "api-ceiling"
log = logging.getLogger(__name__)

CONCURRENCIES = (32, 128)
TARGET = 0.7
NAIVE = "naive API"
SERVICE = "svc api"
RECEIVER_PATH = "apiceiling"
LIVE_LIMIT = "1000000"
"""Requests a second of a live key: far above any rate here, so the limit counts, never refuses."""
TABLE = "naive_api_payments"


async def run(run: Run) -> dict[str, Any]:
    count, rounds, warm_up = (30, 1, 10) if run.smoke else (3000, 3, 300)
    env = {"SVC_RATE_LIMIT_LIVE": LIVE_LIMIT, "SVC_RATE_LIMIT_TEST": "0"}
    system = ServiceSystem(
        run.procs, run.stores, 0, "apiceiling", env, scheduler=False, api=True, label=SERVICE
    )
    port, queue = free_port(), f"bench{uuid.uuid4().hex[:10]}.naiveapi"
    naive_url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", __name__, str(port), run.stores.database_url]
    naive = run.procs.start("naive-api", [*command, run.stores.amqp_url, queue])
    try:
        await system.open()
        key, org = await shop(system, run.bench, RECEIVER_PATH, "live")
        await system.start()
        await wait_ready(f"{naive_url}/ready", naive)
        for url in (naive_url, system.api_url):  # pools open, key cached, endpoint cached
            for concurrency in CONCURRENCIES:
                await post_payments(url, key, warm_up, concurrency)
        runs: list[dict[str, Any]] = []
        created: list[str] = []
        servers = run.bench.servers()
        for round_ in range(rounds):
            for concurrency in CONCURRENCIES:
                for name in [NAIVE, SERVICE] if round_ % 2 == 0 else [SERVICE, NAIVE]:
                    if name == NAIVE:
                        url, groups = naive_url, {"api": [naive.pid], **servers}
                    else:
                        url, groups = system.api_url, {**system.cpu_groups(), **servers}
                    trace = CpuTrace(groups)
                    trace.sample()
                    posted, wall = await post_payments(url, key, count, concurrency)
                    trace.sample()
                    runs.append(_row(name, concurrency, posted, wall, trace.spent()))
                    if name == SERVICE:
                        created += [p.payment_id for p in posted if p.payment_id]
                    rate = runs[-1]["rate_per_s"]
                    log.info("api-ceiling: %s at %d: %.0f/s", name, concurrency, rate)
        await system.spawn("scheduler", "dispatcher0")
        await system.ready()
        events, arrived = await delivered(run.bench, system, RECEIVER_PATH, org, created)
    finally:
        await run.procs.stop(naive, grace=5)
        await delete_queues(run.stores.amqp_url, [queue])
        await system.close()
    rows = {
        f"{name}@{c}": median_run(
            [r for r in runs if r["system"] == name and r["concurrency"] == c], "rate_per_s", True
        )
        for c in CONCURRENCIES
        for name in (NAIVE, SERVICE)
    }
    ratio: dict[str, float | None] = {}
    for c in CONCURRENCIES:
        service, naive_rate = rows[f"{SERVICE}@{c}"], rows[f"{NAIVE}@{c}"]["rate_per_s"]
        ratio[str(c)] = round(service["rate_per_s"] / naive_rate, 3) if naive_rate else None
    done = sum(1 for p in created if p in events and events[p][0] in arrived)
    return {
        "count": count,
        "rounds": rounds,
        "rows": rows,
        "ratio": ratio,
        "created": len(created),
        "delivered": done,
        "missing": len(created) - done,
    }


def _row(
    name: str, concurrency: int, posted: list[Posted], wall: float, cpu: dict[str, float]
) -> dict[str, Any]:
    """A timed run's row with its CPU per payment by process and of all of them: on a machine
    of few cores they compete for the same CPU, so the sum, not the API's own share, sets
    what each answers per second."""
    row: dict[str, Any] = {"system": name, "concurrency": concurrency}
    row |= posted_row(posted, wall, {})
    made = row["created"]
    per = {g: round(s * 1e6 / made) if made else None for g, s in cpu.items()}
    total = round(sum(cpu.values()) * 1e6 / made) if made else None
    return row | {"cpu_us_per_payment": per, "cpu_us_per_payment_total": total}


def targets(result: dict[str, Any] | None) -> list[Goal]:
    ratio = (result or {}).get("ratio", {})
    goals = [
        goal(f"payment creation ÷ {NAIVE}, {c} in flight", ratio.get(str(c)), f"≥ {TARGET}")
        for c in CONCURRENCIES
    ]
    missing = None if result is None or "missing" not in result else float(result["missing"])
    return [*goals, goal(f"payment.created missing ({NAIVE} run)", missing, "= 0")]


def markdown(result: dict[str, Any] | None) -> list[str]:
    if not result or not result.get("rows"):
        return []
    rows = []
    for key, row in result["rows"].items():
        name, concurrency = key.split("@")
        ratio = 1.0 if name == NAIVE else result["ratio"][concurrency]
        cpu = " + ".join(f"{fmt(v)} {g}" for g, v in row["cpu_us_per_payment"].items())
        every = " · ".join(fmt(r) for r in row.get("rate_per_s_runs", [row["rate_per_s"]]))
        rows.append(
            [name, concurrency, fmt(row["rate_per_s"]), fmt(ratio, 2), row["p50_ms"]]
            + [row["p99_ms"], cpu, fmt(row["cpu_us_per_payment_total"]), every]
        )
    return [
        f"**Payment creation against the naive API**: {result['count']:,} payments per run, "
        f"{result['rounds']} rounds, each row the median run; {result['delivered']:,} of "
        f"{result['created']:,} `payment.created` delivered.",
        "",
        *table(
            "system | in flight | payments/s | ÷ naive API | p50 ms | p99 ms | CPU µs/payment "
            "by process | CPU µs/payment, all | every run, payments/s",
            rows,
        ),
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
        columns = ("id", "amount", "currency", "channel", "success_url")
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute(
                f"INSERT INTO {TABLE} ({', '.join(columns)}, created_at) "
                "VALUES ($1, $2, $3, $4, $5, $6)",
                *(payment[c] for c in columns),
                now,
            )
        body = orjson.dumps(payment)
        message = aio_pika.Message(body, delivery_mode=aio_pika.DeliveryMode.PERSISTENT)
        await channel.default_exchange.publish(message, routing_key=queue)
        return web.Response(body=body, status=201, content_type="application/json")

    async def ready(_: web.Request) -> web.Response:
        return web.json_response({"ready": True})

    app = web.Application()
    app.router.add_post("/v1/payments", create)
    app.router.add_get("/ready", ready)
    await serve_locally(app, port)
    await asyncio.Future()


if __name__ == "__main__":
    run_fast(serve(int(sys.argv[1]), *sys.argv[2:5]))
