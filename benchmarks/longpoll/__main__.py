"""``python -m benchmarks.longpoll``: hold N concurrent long polls on one API process.

Starts ``svc api`` as a child process in a fresh namespace (real Redis and RabbitMQ) on a
PostgreSQL database of its own (created, migrated and dropped as in ``python -m benchmarks``),
creates N payments through the API, opens one ``GET /v1/payments/{id}?wait=30`` per payment,
and measures the API process's memory per open wait and the wake-up latency: from a payment's
state change (its transaction in PostgreSQL) until its long poll's answer arrives. Wake-ups
are measured one at a time (paced), then for all remaining waits at once (a burst).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import platform
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp

from benchmarks.cleanup import delete_namespace
from benchmarks.database import admin_url, bench_database
from benchmarks.procs import free_port
from svc.context import Context, open_context
from svc.crypto import new_key_text
from svc.payments.flow import move
from svc.settings import Settings

RESULTS = Path(__file__).parent / "results"
WAIT = 30
BATCH = 500


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 2)

    return {
        "p50_ms": at(0.50),
        "p90_ms": at(0.90),
        "p99_ms": at(0.99),
        "max_ms": at(1.0),
        "mean_ms": round(statistics.fmean(ordered) * 1000, 2),
        "count": len(ordered),
    }


class Bench:
    """The client side: an HTTP session with one key, and the waits it holds."""

    def __init__(self, http: aiohttp.ClientSession, ctx: Context, key: str) -> None:
        self.http = http
        self.ctx = ctx
        self.headers = {"Authorization": f"Bearer {key}"}
        self.answered: dict[str, float] = {}
        self.arrived: dict[str, asyncio.Event] = {}
        # A burst of changes queues here, not on the pool's acquire timeout.
        self.gate = asyncio.Semaphore(ctx.settings.database_pool_size)

    async def open_waits(self) -> float:
        async with self.http.get("/metrics") as response:
            for line in (await response.text()).splitlines():
                if line.startswith("svc_long_polls_open "):
                    return float(line.split()[1])
        return 0.0

    async def until_open(self, count: int) -> None:
        """Wait until the API reports ``count`` open waits (its gauge); fail after 20 s."""
        async with asyncio.timeout(20):
            while await self.open_waits() < count:  # noqa: ASYNC110 — a remote gauge
                await asyncio.sleep(0.05)

    async def create_payments(self, count: int) -> tuple[list[str], float]:
        ids: list[str] = []
        gate = asyncio.Semaphore(100)

        async def one() -> None:
            async with gate:
                form = {"amount": "2450", "success_url": "https://shop.example/"}
                headers = {**self.headers, "Idempotency-Key": uuid.uuid4().hex}
                async with self.http.post("/v1/payments", data=form, headers=headers) as answer:
                    assert answer.status == 201, await answer.text()
                    ids.append((await answer.json())["id"])

        started = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(count)))
        return ids, time.perf_counter() - started

    async def poll(self, payment_id: str) -> None:
        self.arrived[payment_id] = asyncio.Event()
        url = f"/v1/payments/{payment_id}?wait={WAIT}"
        async with self.http.get(url, headers=self.headers) as response:
            body = await response.json()
        self.answered[payment_id] = time.perf_counter()
        self.arrived[payment_id].set()
        assert body["status"] == "canceled", body

    async def wake(self, payment_id: str) -> tuple[float, float]:
        """Cancel the payment; returns when the change was sent and when it was committed."""
        t0 = time.perf_counter()
        async with self.gate:
            await move(self.ctx, payment_id, "canceled", {"cancel_reason": "requested"})
        return t0, time.perf_counter()

    async def reads(self, ids: list[str]) -> list[float]:
        took = []
        for payment_id in ids:
            t0 = time.perf_counter()
            async with self.http.get(f"/v1/payments/{payment_id}", headers=self.headers) as r:
                await r.read()
            took.append(time.perf_counter() - t0)
        return took


async def measure(bench: Bench, pid: int, count: int, paced: int) -> dict[str, Any]:
    ids, create_s = await bench.create_payments(count)
    await asyncio.sleep(1)
    rss_before = rss_kib(pid)
    opening = time.perf_counter()
    tasks = []
    for start in range(0, count, BATCH):  # batches keep the accept backlog short
        tasks += [asyncio.create_task(bench.poll(p)) for p in ids[start : start + BATCH]]
        await bench.until_open(len(tasks))
    open_s = time.perf_counter() - opening
    await asyncio.sleep(1)
    rss_open = rss_kib(pid)
    reads = await bench.reads(ids[:100])
    paced_latency = []
    for payment_id in ids[:paced]:
        t0, _ = await bench.wake(payment_id)
        await bench.arrived[payment_id].wait()
        paced_latency.append(bench.answered[payment_id] - t0)
        await asyncio.sleep(0.005)
    rest = ids[paced:]
    sent = dict(zip(rest, await asyncio.gather(*(bench.wake(p) for p in rest)), strict=True))
    await asyncio.gather(*tasks)
    first = min(t0 for t0, _ in sent.values())
    total = max(bench.answered[p] for p in rest) - first
    # From the change being sent: includes the queueing of 4,500 transactions in this process.
    burst = [bench.answered[p] - sent[p][0] for p in rest]
    return {
        "waits": count,
        "payments_created_per_s": round(count / create_s),
        "open_all_waits_s": round(open_s, 2),
        "rss_before_mib": round(rss_before / 1024, 1),
        "rss_with_waits_mib": round(rss_open / 1024, 1),
        "memory_per_wait_kib": round((rss_open - rss_before) / count, 2),
        "read_while_waiting": percentiles(reads),
        "wakeup_paced": percentiles(paced_latency),
        "wakeup_burst": {
            **percentiles(burst),
            "all_answered_s": round(total, 3),
            "wakeups_per_s": round(len(rest) / total),
        },
    }


async def _ready(url: str, patience: float = 30) -> None:
    async with aiohttp.ClientSession() as session, asyncio.timeout(patience):
        while True:
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(url) as response:
                    if response.status == 200:
                        return
            await asyncio.sleep(0.05)


async def run(count: int, paced: int, admin: str) -> dict[str, Any]:
    async with bench_database(admin) as database_url:
        settings = Settings(
            namespace=f"bench{uuid.uuid4().hex[:10]}",
            http_host="127.0.0.1",
            http_port=free_port(),
            database_url=database_url,
            secret_key=new_key_text("bench"),
        )
        result = await _run_api(settings, count, paced)
    now = datetime.datetime.now(datetime.UTC)
    machine = {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    return {
        "benchmark": "longpoll",
        "date": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine,
        **result,
    }


async def _run_api(settings: Settings, count: int, paced: int) -> dict[str, Any]:
    """``svc api`` as a child process on ``settings``, measured, stopped and cleaned up."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env.update(
        SVC_NAMESPACE=settings.namespace,
        SVC_HTTP_PORT=str(settings.http_port),
        SVC_HTTP_HOST="127.0.0.1",
        SVC_LOG_LEVEL="WARNING",
        SVC_DATABASE_URL=settings.database_url,
        SVC_SECRET_KEY=settings.secret_key,
    )
    process = await asyncio.create_subprocess_exec(sys.executable, "-m", "cli", "api", env=env)
    base = f"http://127.0.0.1:{settings.http_port}"
    try:
        await _ready(base + "/ready")
        async with open_context(settings) as ctx:
            key, _ = await ctx.api_keys.create("test", "bench")
            connector = aiohttp.TCPConnector(limit=0)
            timeout = aiohttp.ClientTimeout(total=WAIT + 30)
            async with aiohttp.ClientSession(base, connector=connector, timeout=timeout) as http:
                result = await measure(Bench(http, ctx, key), process.pid, count, paced)
    finally:
        process.terminate()
        await process.wait()
        await delete_namespace(settings)
    return result


def table(result: dict[str, Any]) -> str:
    reads, paced, burst = (
        result["read_while_waiting"],
        result["wakeup_paced"],
        result["wakeup_burst"],
    )
    rows = [
        ("concurrent long polls held by one API process", f"{result['waits']:,}"),
        (
            "API process RSS before / with the waits",
            f"{result['rss_before_mib']} / {result['rss_with_waits_mib']} MiB",
        ),
        (
            "memory per open wait (connection, request, listener)",
            f"{result['memory_per_wait_kib']} KiB",
        ),
        (
            "plain payment read while all waits are open, p50 / p99",
            f"{reads['p50_ms']} / {reads['p99_ms']} ms",
        ),
        (
            f"wake-up latency, {paced['count']:,} one at a time, p50 / p99 / max",
            f"{paced['p50_ms']} / {paced['p99_ms']} / {paced['max_ms']} ms",
        ),
        (
            f"wake-up latency, {burst['count']:,} changed at once, p50 / p99 / max",
            f"{burst['p50_ms']} / {burst['p99_ms']} / {burst['max_ms']} ms",
        ),
        (
            f"all {burst['count']:,} burst waits answered after the first change",
            f"{burst['all_answered_s']} s ({burst['wakeups_per_s']:,} wake-ups/s)",
        ),
    ]
    return "\n".join(["| measure | result |", "|---|---|"] + [f"| {a} | {b} |" for a, b in rows])


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.longpoll", description=__doc__)
    parser.add_argument("--waits", type=int, default=5000)
    parser.add_argument("--paced", type=int, default=500, help="wake-ups measured one by one")
    parser.add_argument("--out", type=Path, default=RESULTS, help="directory for the JSON")
    parser.add_argument(
        "--database-url",
        default=admin_url(),
        help="PostgreSQL admin URL where the run creates (and drops) its own database",
    )
    args = parser.parse_args()
    result = asyncio.run(run(args.waits, min(args.paced, args.waits - 1), args.database_url))
    args.out.mkdir(parents=True, exist_ok=True)
    name = f"longpoll-{result['date'][:10]}.json"
    (args.out / name).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(table(result))


if __name__ == "__main__":
    main()
