"""The naive API: the least a payment creation can do with this service's libraries.

One aiohttp handler on uvloop, in one process: read the form, one ``INSERT`` in a
transaction with asyncpg, one persistent message published with a broker confirm (aio-pika),
answer JSON. No key check, rate limit, idempotency record, event row, outbox or metrics.
Server: ``python -m benchmarks.naive_api PORT DATABASE_URL AMQP_URL QUEUE``.
"""

from __future__ import annotations

import asyncio
import secrets
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

import aio_pika
import asyncpg
import orjson
from aiohttp import web

from harness.cleanup import delete_queues
from harness.ports import free_port, wait_ready
from harness.processes import Processes

TABLE = "naive_api_payments"
POOL = 10
"""Connections, as the service's ``SVC_DATABASE_POOL_SIZE`` default."""

CREATE = f"""CREATE TABLE IF NOT EXISTS {TABLE} (
    id text PRIMARY KEY,
    amount bigint NOT NULL,
    currency text NOT NULL,
    channel text NOT NULL,
    success_url text NOT NULL,
    created_at timestamptz NOT NULL
)"""
INSERT = (
    f"INSERT INTO {TABLE} (id, amount, currency, channel, success_url, created_at) "
    "VALUES ($1, $2, $3, $4, $5, $6)"
)


@dataclass
class NaiveApi:
    """The naive API as a child process of the harness."""

    procs: Processes
    database_url: str
    amqp_url: str
    queue: str = field(default_factory=lambda: f"bench{uuid.uuid4().hex[:10]}.naiveapi")
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pids(self) -> list[int]:
        return [] if self.process is None else [self.process.pid]

    async def start(self) -> None:
        command = [
            sys.executable,
            "-m",
            "benchmarks.naive_api",
            str(self.port),
            self.database_url,
            self.amqp_url,
            self.queue,
        ]
        self.process = self.procs.start("naive-api", command, {})
        await wait_ready(f"{self.url}/ready", self.process)

    async def close(self) -> None:
        if self.process is not None:
            await self.procs.stop(self.process, grace=5)
            self.process = None
        await delete_queues(self.amqp_url, [self.queue])


async def serve(port: int, database_url: str, amqp_url: str, queue_name: str) -> None:
    pool = await asyncpg.create_pool(database_url, min_size=POOL, max_size=POOL)
    await pool.execute(CREATE)  # in the run's own database, dropped with it
    connection = await aio_pika.connect(amqp_url)
    channel = await connection.channel(publisher_confirms=True)
    await channel.declare_queue(queue_name, durable=True)
    exchange = channel.default_exchange

    async def create(request: web.Request) -> web.Response:
        form = await request.post()
        now = time.time()
        payment = {
            "id": "pay_" + secrets.token_hex(12),
            "object": "payment",
            "amount": int(str(form["amount"])),
            "currency": str(form.get("currency", "CHF")),
            "channel": str(form.get("channel", "online")),
            "success_url": str(form["success_url"]),
            "status": "pending",
            "created_at": datetime.fromtimestamp(now, UTC).isoformat(),
        }
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute(
                INSERT,
                payment["id"],
                payment["amount"],
                payment["currency"],
                payment["channel"],
                payment["success_url"],
                datetime.fromtimestamp(now, UTC),
            )
        body = orjson.dumps(payment)
        message = aio_pika.Message(body, delivery_mode=aio_pika.DeliveryMode.PERSISTENT)
        await exchange.publish(message, routing_key=queue_name)
        return web.Response(body=body, status=201, content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/payments", create)
    app.router.add_get("/ready", lambda _: _ready())
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        await asyncio.Future()
    finally:
        await runner.cleanup()
        await connection.close()
        await pool.close()


async def _ready() -> web.Response:
    return web.json_response({"ready": True})


def main() -> None:
    port, database_url, amqp_url, queue_name = sys.argv[1:5]
    try:
        import uvloop  # the service runs on uvloop too, so the ceiling does as well
    except ImportError:
        asyncio.run(serve(int(port), database_url, amqp_url, queue_name))
    else:
        uvloop.run(serve(int(port), database_url, amqp_url, queue_name))


if __name__ == "__main__":
    main()
