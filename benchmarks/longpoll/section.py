"""Long polls, then payment streams, held by a fresh ``svc api`` process each, some of their
payments changed as the API sees a change; latency from each commit to its client holding the
final payment (the method: ``docs/benchmarks/reading.md``)."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import resource
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from multiprocessing.connection import Connection
from typing import Any

import aiohttp
import orjson

from benchmarks.figures import fmt
from benchmarks.receipts import spread
from benchmarks.sections import Goal, Run, goal
from benchmarks.service import ServiceSystem, Stores
from benchmarks.workload import run_fast
from harness.database import bench_database
from harness.ports import cancel, wait_until
from harness.processes import Processes
from harness.sampling import RssSampler
from svc.context import Context, open_context
from svc.db.times import now_ms, to_dt
from svc.orgs import Scope
from svc.payments import flow
from svc.payments.model import FINAL
from svc.pubsub.wakeups import status_signal

KEY = "longpolls"

P99_MS = 200
RSS_MIB = 400
KINDS = ("waits", "streams")
CHANGER_POOL = 32  # connections of the harness's context: changes must not queue behind ten
SUCCESS_URL = "https://shop.example/done"
ANSWER_PATIENCE = 15.0  # seconds after the last change for every change to be answered
CANCEL = """UPDATE payments SET status = 'canceled', cancel_reason = 'requested', updated_at = $2
            WHERE id = $1 AND status = 'pending' RETURNING true"""
WAIT = 30  # seconds of ``GET /v1/payments/{id}?wait=``: the most the API allows


@dataclass(frozen=True, slots=True)
class Sizes:
    waits: int = 10_000
    streams: int = 5_000
    changes: int = 1_000
    spread_s: float = 1.0
    clients: int = 2  # processes, so that one event loop does not pace every opening
    batch: int = 1_000  # opened per round: the API's listen backlog is 128
    settle_s: float = 1.0  # pause between the last opening and the first change


SMOKE = Sizes(waits=200, streams=100, changes=50, spread_s=0.25, clients=1, batch=200, settle_s=0.2)


@dataclass
class Tally:
    """Final answers' times (``time.monotonic()``, one clock for all processes) and refusals."""

    answered: dict[str, float] = field(default_factory=dict)
    refused: int = 0


async def _hold(
    session: aiohttp.ClientSession, payments: str, kind: str, tally: Tally, payment_id: str
) -> None:
    """Wait (again when a wait runs out) or stream until the payment is final."""
    url = f"{payments}/{payment_id}"
    try:
        while kind == "waits":
            async with session.get(f"{url}?wait={WAIT}") as answer:
                answer.raise_for_status()
                final = orjson.loads(await answer.read())["status"] in FINAL
            if final:
                tally.answered[payment_id] = time.monotonic()
                return
        async with session.ws_connect(f"{url}/stream") as ws:
            async for message in ws:
                data = orjson.loads(message.data) if message.type == aiohttp.WSMsgType.TEXT else {}
                if data.get("type") == "payment" and data["payment"]["status"] in FINAL:
                    tally.answered[payment_id] = time.monotonic()
                    return
        tally.refused += 1
    except (aiohttp.ClientError, TimeoutError):
        tally.refused += 1


async def _serve(conn: Connection, payments: str, key: str, kind: str) -> None:
    """A client process: holds each list of payment ids sent on ``conn``, answering with its
    tally; on None it drops what it holds, sends the tally and ends."""
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=WAIT + 30)
    connector = aiohttp.TCPConnector(limit=0)  # one connection per wait, no cap
    headers = {"Authorization": f"Bearer {key}"}
    tally, tasks = Tally(), []
    async with aiohttp.ClientSession(headers=headers, connector=connector, timeout=timeout) as http:
        while (ids := await asyncio.to_thread(conn.recv)) is not None:
            tasks += [asyncio.create_task(_hold(http, payments, kind, tally, p)) for p in ids]
            conn.send(tally)
        await cancel(*tasks)
        conn.send(tally)


def _client(*args: Any) -> None:
    run_fast(_serve(*args))


Ask = Callable[[Sequence[list[str] | None]], Awaitable[list[Tally]]]


@contextlib.asynccontextmanager
async def clients(count: int, api_url: str, key: str, kind: str) -> AsyncIterator[Ask]:
    """``count`` client processes; ``ask`` sends each its ids (None: finish) for their tallies."""
    context = multiprocessing.get_context("spawn")
    pipes = [context.Pipe() for _ in range(count)]
    args = (f"{api_url}/v1/payments", key, kind)
    processes = [
        context.Process(target=_client, args=(end, *args), daemon=True) for _, end in pipes
    ]
    for process in processes:
        process.start()

    async def ask(ids: Sequence[list[str] | None]) -> list[Tally]:
        for (pipe, _), some in zip(pipes, ids, strict=True):
            pipe.send(some)
        return [await asyncio.to_thread(pipe.recv) for pipe, _ in pipes]

    try:
        await ask([[]] * count)  # every client started, before anything is timed
        yield ask
    finally:
        for process in processes:
            await asyncio.to_thread(process.join, 10)
            process.kill()


def picked(ids: Sequence[str], count: int) -> list[str]:
    """``count`` of ``ids`` spread evenly over the list (so over every client and round)."""
    if count >= len(ids):
        return list(ids)
    return [ids[i * len(ids) // count] for i in range(count)]


def rounds(ids: Sequence[str], parts: int, batch: int) -> list[list[list[str]]]:
    """``ids`` dealt round-robin to ``parts`` clients, in rounds of about ``batch`` in all."""
    shares = [list(ids[i::parts]) for i in range(parts)]
    count = max(1, -(-len(ids) // batch))
    return [
        [s[len(s) * r // count : len(s) * (r + 1) // count] for s in shares] for r in range(count)
    ]


def summary(since: dict[str, float], until: dict[str, float]) -> Mapping[str, float | None]:
    """p50 / p99 / max, in ms, of ``until`` less ``since`` of each payment in both."""
    values = [(until[p] - at) * 1000 for p, at in since.items() if p in until]
    return spread(values) if values else dict.fromkeys(("p50_ms", "p99_ms", "max_ms"))


async def create_payments(ctx: Context, scope: Scope, count: int) -> list[str]:
    """``count`` pending online payments of ``scope``, 250 per transaction."""
    ids = []
    for start in range(0, count, 250):
        async with ctx.db.transaction() as unit:
            for _ in range(min(250, count - start)):
                made = await flow.create_online(
                    ctx, unit, scope, 2450, "CHF", "online", SUCCESS_URL
                )
                ids.append(made.id)
    return ids


async def change(ctx: Context, ids: Sequence[str], seconds: float) -> dict[str, float]:
    """Cancel ``ids`` over ``seconds``, each in one statement followed by the wake-up the API's
    own cancel sends after its commit; when each one committed. The harness shares two cores
    with the API and PostgreSQL, so its changes cost as few round trips as a change can."""
    committed: dict[str, float] = {}
    gate = asyncio.Semaphore(ctx.settings.database_pool_size)  # not the pool's acquire timeout
    start = time.monotonic()

    async def one(payment_id: str, offset: float) -> None:
        await asyncio.sleep(max(0.0, start + offset - time.monotonic()))
        async with gate:
            assert await ctx.db.fetchval(CANCEL, payment_id, to_dt(now_ms())), payment_id
        committed[payment_id] = time.monotonic()
        await ctx.signal(status_signal(payment_id, "canceled"))

    await asyncio.gather(*(one(p, seconds * i / len(ids)) for i, p in enumerate(ids)))
    return committed


async def phase(procs: Processes, stores: Stores, kind: str, sizes: Sizes) -> dict[str, Any]:
    """Hold waits or streams (``kind``) on a fresh API process and change some payments."""
    count = getattr(sizes, kind)
    system = ServiceSystem(procs, stores, 0, f"longpolls-{kind}", scheduler=False, api=True)
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(system.opened())
        settings = replace(system.settings, database_pool_size=CHANGER_POOL)
        changer = await stack.enter_async_context(open_context(settings))
        key, scope = await system.ctx.api_keys.create("test", f"longpolls-{kind}")
        ids = await create_payments(system.ctx, scope, count)
        targets = picked(ids, sizes.changes)
        spare = await create_payments(system.ctx, scope, CHANGER_POOL * 2)
        await system.start()  # the API's port is chosen here: the clients follow
        ask = await stack.enter_async_context(clients(sizes.clients, system.api_url, key, kind))
        (api,) = system.cpu_groups()["api"]
        session = await stack.enter_async_context(aiohttp.ClientSession())
        held = 0

        async def progress() -> tuple[int, int]:  # final answers and refusals so far
            tallies = await ask([[]] * sizes.clients)
            return sum(len(t.answered) for t in tallies), sum(t.refused for t in tallies)

        async def opened() -> bool:
            """The API holds every wait or stream sent so far but those refused."""
            async with session.get(system.metrics_urls()["api"]) as response:
                lines = (await response.text()).splitlines()
            gauge = next(float(n.split()[1]) for n in lines if n.startswith("svc_long_polls_open "))
            return gauge + (await progress())[1] >= held

        async def answered() -> bool:
            return (await progress())[0] >= len(targets)

        for parts in rounds(ids, sizes.clients, sizes.batch):
            await ask(parts)
            held += sum(map(len, parts))
            await wait_until(opened, 30.0)
        await change(changer, spare, 0.0)  # every connection of the changer's pool open
        await asyncio.sleep(sizes.settle_s)  # the last round's reads done
        sampler = RssSampler([api], interval=0.05)
        sampler.start()
        try:
            committed = await change(changer, targets, sizes.spread_s)
            await wait_until(answered, ANSWER_PATIENCE, 0.02)
        finally:
            await sampler.stop()
        tallies = await ask([None] * sizes.clients)
    answers = {p: at for tally in tallies for p, at in tally.answered.items()}
    commits = sorted(committed.values())
    return {
        "held": count,
        "rss_peak_mib": sampler.peak_mb,
        "changes": len(targets),
        "changes_committed_s": round(commits[-1] - commits[0], 3) if commits else None,
        "answered": sum(1 for p in committed if p in answers),
        "latency": summary(committed, answers),
        "refused": sum(tally.refused for tally in tallies),
    }


async def run(run: Run) -> dict[str, Any]:
    sizes = SMOKE if run.smoke else Sizes()
    # Open files for every connection and a margin, for this process and those it starts.
    needed = max(sizes.waits, sizes.streams) + 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    found: dict[str, Any] = {"sizes": asdict(sizes)}
    async with bench_database(run.admin_url) as database_url:
        stores = replace(run.stores, database_url=database_url)
        for kind in KINDS:
            found[kind] = await phase(run.procs, stores, kind, sizes)
    return found


def targets(result: dict[str, Any] | None) -> list[Goal]:
    """Named by the full run's sizes; the commits' goal follows the sizes the run had."""
    full, sizes = Sizes(), Sizes(**result["sizes"]) if result else Sizes()
    phases = {kind: (result or {}).get(kind) or {} for kind in KINDS}
    after = f"p99 ms after {full.changes:,} changes in {full.spread_s:g} s"
    goals = []
    for kind, rss in zip(KINDS, ("API RSS with {}, MB", "{}, API RSS MB"), strict=True):
        held, found = f"{getattr(full, kind):,} {kind}", phases[kind]
        p99 = (found.get("latency") or {}).get("p99_ms")
        goals.append(goal(f"long polls: {held}, {after}", p99, f"≤ {P99_MS}"))
        peak = found.get("rss_peak_mib")
        goals.append(goal(f"long polls: {rss.format(held)}", peak, f"≤ {RSS_MIB}"))
    measured = all(phases.values())
    committed = [found.get("changes_committed_s") for found in phases.values()]
    refused = [f["refused"] + f["changes"] - f["answered"] for f in phases.values() if measured]
    return [
        *goals,
        goal(
            f"long polls: {full.changes:,} changes meant within {full.spread_s:g} s, slowest "
            "phase committed them within, s (the harness is one process)",
            None if None in committed else max(c for c in committed if c is not None),
            f"≤ {sizes.spread_s * 1.1:g}",
        ),
        goal(
            "long polls: refused (non-2xx, transport errors, failed stream opens, unanswered)",
            sum(refused) if measured else None,
            "0",
        ),
    ]


def markdown(result: dict[str, Any] | None) -> list[str]:
    if not result:
        return []
    lines = [
        "**Long polls and payment streams**: one `svc api` process holding them, "
        f"{result['sizes']['clients']} client processes; payments changed as the API sees a "
        "change; latency from each change's commit to its client holding the final payment.",
        "",
    ]
    for kind in KINDS:
        r = result[kind]
        p50, p99, top = (fmt(r["latency"][q], 1) for q in ("p50_ms", "p99_ms", "max_ms"))
        lines.append(
            f"- {r['held']:,} {kind}: API peak RSS {r['rss_peak_mib']} MiB; {r['changes']:,} "
            f"changes committed within {r['changes_committed_s']} s; commit to answer p50 "
            f"{p50}, p99 {p99}, max {top} ms; {r['answered']:,} answered, {r['refused']} refused."
        )
    return [*lines, ""]
