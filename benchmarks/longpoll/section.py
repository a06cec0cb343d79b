"""Long polls and payment streams held by one ``svc api`` process, and waking some of them.

One phase per kind (waits, then streams), each on a fresh ``svc api`` process, on a database
of the section's own: the payments are created, client processes open one wait or stream per
payment, and some of the payments are changed as the API sees a change; each change's latency
runs from its commit to its client holding the final payment, split at the wake-up signal.
The method is in ``docs/benchmarks/reading.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import resource
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from multiprocessing.connection import Connection
from typing import Any

import aiohttp
import orjson
import psutil

from benchmarks.figures import fmt
from benchmarks.receipts import percentile
from benchmarks.sections import Goal, Run, table
from benchmarks.service import ServiceSystem, Stores
from harness.database import bench_database
from harness.processes import Processes
from harness.sampling import RssSampler
from svc.context import Context, open_context
from svc.db.times import now_ms
from svc.orgs import Scope
from svc.payments import flow
from svc.payments.model import FINAL, allowed

KEY = "longpolls"
log = logging.getLogger(__name__)

P99_MS = 200
RSS_MIB = 400
KINDS = ("waits", "streams")
WAIT = 30
"""Seconds of ``GET /v1/payments/{id}?wait=``: the most the API allows."""
CHANGER_POOL = 32
"""Connections of the harness's own context for the changes (the API keeps its default): a
burst of changes must not queue behind ten connections."""
SUCCESS_URL = "https://shop.example/done"
ANSWER_PATIENCE = 15.0
"""Seconds after the last change within which every changed payment must be answered."""


@dataclass(frozen=True, slots=True)
class Sizes:
    waits: int = 10_000
    streams: int = 5_000
    changes: int = 1_000
    spread_s: float = 1.0
    clients: int = 2
    """Client processes, so that one event loop does not pace the opening of every connection."""
    batch: int = 1_000
    """Connections opened per round (the API's listen backlog is 128: rounds keep SYNs short)."""
    settle_s: float = 1.0
    """Pause between the last opening and the memory reading."""


SMOKE = Sizes(waits=200, streams=100, changes=50, spread_s=0.25, clients=1, batch=200, settle_s=0.2)


@dataclass
class Tally:
    """What one client process saw: when each final answer arrived (``time.monotonic()``, one
    clock for every process), and what went wrong."""

    answered: dict[str, float] = field(default_factory=dict)
    refused: int = 0
    """Non-2xx answers, transport errors, streams that ended without the final payment."""
    expired: int = 0
    """Waits that ran out (200 with an open payment) and were sent again, as a client does."""


async def _hold(
    session: aiohttp.ClientSession, payments: str, kind: str, tally: Tally, payment_id: str
) -> None:
    """Wait (again whenever a wait runs out) or stream until the payment is final."""
    url = f"{payments}/{payment_id}"
    try:
        while kind == "waits":
            async with session.get(f"{url}?wait={WAIT}") as answer:
                answer.raise_for_status()
                final = orjson.loads(await answer.read())["status"] in FINAL
            if final:
                tally.answered[payment_id] = time.monotonic()
                return
            tally.expired += 1
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
    """Follow the harness's commands on ``conn``: ``open`` (one hold per payment id),
    ``answered`` (final answers and refusals so far), ``finish`` (drop what is open, send the
    tally and end)."""
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=WAIT + 30)
    tally, tasks = Tally(), []
    async with aiohttp.ClientSession(
        headers={"Authorization": f"Bearer {key}"},
        connector=aiohttp.TCPConnector(limit=0),  # one connection per wait, no cap
        timeout=timeout,
    ) as session:
        while True:
            command, ids = await asyncio.to_thread(conn.recv)
            if command == "open":
                tasks += [
                    asyncio.create_task(_hold(session, payments, kind, tally, p)) for p in ids
                ]
                conn.send(None)
            elif command == "answered":
                conn.send((len(tally.answered), tally.refused))
            else:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                conn.send(tally)
                return


def _client(*args: Any) -> None:
    """A client process's entry point (uvloop, as the service, when installed)."""
    run: Any = asyncio.run
    with contextlib.suppress(ImportError):
        import uvloop

        run = uvloop.run
    run(_serve(*args))


Ask = Callable[[str, Sequence[Any] | None], Awaitable[list[Any]]]


@contextlib.asynccontextmanager
async def clients(count: int, api_url: str, key: str, kind: str) -> AsyncIterator[Ask]:
    """``count`` client processes of ``kind``; yields ``ask(command, arguments)``, which sends
    each client its argument (or None) and gathers their answers."""
    context = multiprocessing.get_context("spawn")
    pipes = [context.Pipe() for _ in range(count)]
    args = (f"{api_url}/v1/payments", key, kind)
    processes = [
        context.Process(target=_client, args=(end, *args), daemon=True) for _, end in pipes
    ]
    for process in processes:
        process.start()

    async def ask(command: str, arguments: Sequence[Any] | None) -> list[Any]:
        for (pipe, _), argument in zip(pipes, arguments or [None] * count, strict=True):
            pipe.send((command, argument))
        return [await asyncio.to_thread(pipe.recv) for pipe, _ in pipes]

    try:
        await ask("answered", None)  # every client started, before anything is timed
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
    """The opening rounds: ``ids`` dealt round-robin to ``parts`` clients, each round about
    ``batch`` ids in all, taken from every client's share."""
    shares = [list(ids[i::parts]) for i in range(parts)]
    count = max(1, -(-len(ids) // batch))
    return [
        [s[len(s) * r // count : len(s) * (r + 1) // count] for s in shares] for r in range(count)
    ]


def summary(since: dict[str, float], until: dict[str, float]) -> dict[str, float | None]:
    """p50 / p90 / p99 / max, in ms, of ``until`` less ``since`` of each payment in both."""
    values = [(until[p] - at) * 1000 for p, at in since.items() if p in until]
    return {
        f"p{q}_ms": round(percentile(values, q), 1) if values else None for q in (50, 90, 99)
    } | {"max_ms": round(max(values), 1) if values else None}


def raise_limits(connections: int) -> None:
    """Let this process, and every process it starts from now on (the API, the clients), hold
    ``connections`` sockets and a margin."""
    needed = connections + 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


async def create_payments(ctx: Context, scope: Scope, count: int) -> list[str]:
    """``count`` pending online payments of ``scope``, 250 per transaction, four at once."""
    gate = asyncio.Semaphore(4)

    async def some(n: int) -> list[str]:
        async with gate, ctx.db.transaction() as unit:
            made = [
                await flow.create_online(ctx, unit, scope, 2450, "CHF", "online", SUCCESS_URL)
                for _ in range(n)
            ]
        return [payment.id for payment in made]

    parts = await asyncio.gather(*(some(min(250, count - i)) for i in range(0, count, 250)))
    return [payment_id for part in parts for payment_id in part]


async def change(
    ctx: Context, ids: Sequence[str], seconds: float
) -> tuple[dict[str, float], dict[str, float]]:
    """Cancel ``ids`` spread over ``seconds``, each as the API sees a change; when each one's
    transaction committed, and when its wake-up signal was sent."""
    committed: dict[str, float] = {}
    signalled: dict[str, float] = {}
    gate = asyncio.Semaphore(ctx.settings.database_pool_size)  # not the pool's acquire timeout
    start = time.monotonic()

    async def one(payment_id: str, offset: float) -> None:
        await asyncio.sleep(max(0.0, start + offset - time.monotonic()))

        async def commit() -> None:
            committed[payment_id] = time.monotonic()

        async def signal() -> None:
            signalled[payment_id] = time.monotonic()

        async with gate, ctx.unit() as unit:
            unit.after_commit(commit)  # the first effect: runs right after the commit
            payment = await ctx.payments.lock(unit, payment_id)
            assert payment is not None and allowed(payment.status, "canceled"), payment_id
            canceled = payment.moved("canceled", now_ms(), cancel_reason="requested")
            await ctx.payments.update(unit, canceled)
            flow.wake_after(ctx, unit, canceled)
            unit.after_commit(signal)

    await asyncio.gather(*(one(p, seconds * i / len(ids)) for i, p in enumerate(ids)))
    return committed, signalled


async def _until(done: Callable[[], Awaitable[bool]], patience: float, every: float) -> None:
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        if await done():
            return
        await asyncio.sleep(every)


def rss_mib(pid: int) -> float:
    return round(psutil.Process(pid).memory_info().rss / 2**20, 1)


async def phase(
    procs: Processes, stores: Stores, kind: str, count: int, sizes: Sizes
) -> dict[str, Any]:
    """Hold ``count`` waits or streams (``kind``) on a fresh API process and change
    ``sizes.changes`` of their payments."""
    system = ServiceSystem(procs, stores, 0, f"longpolls-{kind}", scheduler=False, api=True)
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(system.close)
        await system.open()
        settings = replace(system.settings, database_pool_size=CHANGER_POOL)
        changer = await stack.enter_async_context(open_context(settings))
        key, scope = await system.ctx.api_keys.create("test", f"longpolls-{kind}")
        ids = await create_payments(system.ctx, scope, count)
        spare = await create_payments(system.ctx, scope, CHANGER_POOL * 2)
        await system.start()  # the API's port is chosen here: the clients follow
        ask = await stack.enter_async_context(clients(sizes.clients, system.api_url, key, kind))
        (api,) = system.cpu_groups()["api"]
        rss_before = rss_mib(api)
        session = await stack.enter_async_context(aiohttp.ClientSession())
        held = 0

        async def progress() -> list[int]:
            """Final answers and refusals so far, over every client."""
            return [sum(counts) for counts in zip(*await ask("answered", None), strict=True)]

        async def opened() -> bool:
            """The API holds every wait or stream sent so far but those refused."""
            async with session.get(system.metrics_urls()["api"]) as response:
                lines = (await response.text()).splitlines()
            gauge = next(float(n.split()[1]) for n in lines if n.startswith("svc_long_polls_open "))
            return gauge + (await progress())[1] >= held

        opening = time.monotonic()
        for parts in rounds(ids, sizes.clients, sizes.batch):
            await ask("open", parts)
            held += sum(map(len, parts))
            await _until(opened, 30.0, 0.25)
        open_s = time.monotonic() - opening
        await change(changer, spare, 0.0)  # every connection of the changer's pool open
        await asyncio.sleep(sizes.settle_s)  # the last round's reads done, memory as it stays
        rss_open = rss_mib(api)
        targets = picked(ids, sizes.changes)
        sampler = RssSampler([api], interval=0.05)
        sampler.start()
        try:
            committed, signalled = await change(changer, targets, sizes.spread_s)

            async def answered() -> bool:
                return (await progress())[0] >= len(targets)

            await _until(answered, ANSWER_PATIENCE, 0.02)
        finally:
            await sampler.stop()
        tallies: list[Tally] = await ask("finish", None)
    answers = {p: at for tally in tallies for p, at in tally.answered.items()}
    commits = sorted(committed.values())
    return {
        "held": count,
        "open_s": round(open_s, 2),
        "rss_before_mib": rss_before,
        "rss_open_mib": rss_open,
        "rss_peak_mib": sampler.peak_mb,
        "kib_per_connection": round((rss_open - rss_before) * 1024 / count, 1),
        "changes": len(targets),
        "changes_committed_s": round(commits[-1] - commits[0], 3) if commits else None,
        "answered": sum(1 for p in committed if p in answers),
        "latency": summary(committed, answers),
        "commit_to_signal": summary(committed, signalled),
        "signal_to_answer": summary(signalled, answers),
        "refused": sum(tally.refused for tally in tallies),
        "expired": sum(tally.expired for tally in tallies),
    }


async def run(run: Run) -> dict[str, Any]:
    """Both phases, waits then streams, on a database of the section's own."""
    sizes = SMOKE if run.smoke else Sizes()
    raise_limits(max(sizes.waits, sizes.streams))
    found: dict[str, Any] = {"sizes": asdict(sizes)}
    async with bench_database(run.admin_url) as database_url:
        stores = replace(run.stores, database_url=database_url)
        for kind in KINDS:
            count = getattr(sizes, kind)
            try:
                found[kind] = await phase(run.procs, stores, kind, count, sizes)
            except Exception as exc:  # the other phase still runs; its targets still count
                log.exception("%s: the phase failed", kind)
                found[kind] = {"held": count, "error": repr(exc)}
    return found


def targets(result: dict[str, Any] | None) -> list[Goal]:
    """Named by the full run's sizes (a smoke run's targets keep the names of the recorded
    ones); the commits' goal follows the sizes the run had."""
    full, sizes = Sizes(), Sizes(**result["sizes"]) if result else Sizes()
    phases = {kind: (result or {}).get(kind) or {} for kind in KINDS}
    after = f"p99 ms after {full.changes:,} changes in {full.spread_s:g} s"
    goals = []
    for kind, rss in zip(KINDS, ("API RSS with {}, MB", "{}, API RSS MB"), strict=True):
        held, found = f"{getattr(full, kind):,} {kind}", phases[kind]
        p99 = (found.get("latency") or {}).get("p99_ms")
        peak = found.get("rss_peak_mib")
        goals.append(
            Goal(f"long polls: {held}, {after}", p99, f"≤ {P99_MS}", lambda v: v <= P99_MS)
        )
        goals.append(
            Goal(f"long polls: {rss.format(held)}", peak, f"≤ {RSS_MIB}", lambda v: v <= RSS_MIB)
        )
    measured = all(found and "error" not in found for found in phases.values())
    committed = [found.get("changes_committed_s") for found in phases.values()]
    refused = [f["refused"] + f["changes"] - f["answered"] for f in phases.values() if measured]
    within = sizes.spread_s * 1.1
    return [
        *goals,
        Goal(
            f"long polls: {full.changes:,} changes meant within {full.spread_s:g} s, slowest "
            "phase committed them within, s (the harness is one process)",
            None if None in committed else max(c for c in committed if c is not None),
            f"≤ {within:g}",
            lambda v: v <= within,
        ),
        Goal(
            "long polls: refused (non-2xx, transport errors, failed stream opens, unanswered)",
            sum(refused) if measured else None,
            "0",
            lambda v: v == 0,
        ),
    ]


MEASURES = (
    "all opened in, s",
    "API RSS before / all open / peak, MiB",
    "memory per open connection, KiB",
    "changes / committed within, s",
    "commit to answer, p50 / p90 / p99 / max, ms",
    "of which commit to signal sent, p50 / p99, ms",
    "of which signal sent to answer, p50 / p99, ms",
    "answered / refused / wait ran out",
)


def _column(r: dict[str, Any]) -> list[str]:
    """One phase's figures, in the order of ``MEASURES``."""

    def ms(key: str, quantiles: Sequence[str] = ("p50_ms", "p99_ms")) -> str:
        return " / ".join(fmt(r[key][q], 1) for q in quantiles)

    return [
        fmt(r["open_s"], 2),
        f"{r['rss_before_mib']} / {r['rss_open_mib']} / {r['rss_peak_mib']}",
        fmt(r["kib_per_connection"], 1),
        f"{r['changes']:,} / {r['changes_committed_s']}",
        ms("latency", ("p50_ms", "p90_ms", "p99_ms", "max_ms")),
        ms("commit_to_signal"),
        ms("signal_to_answer"),
        f"{r['answered']:,} / {r['refused']} / {r['expired']}",
    ]


def markdown(result: dict[str, Any] | None) -> list[str]:
    if not result:
        return []
    failed = [
        f"{kind} failed: {result[kind]['error']}" for kind in KINDS if "error" in result[kind]
    ]
    if failed:
        return ["; ".join(failed), ""]
    waits, streams = result["waits"], result["streams"]
    return [
        "**Long polls and payment streams**: one `svc api` process holding them, "
        f"{result['sizes']['clients']} client processes; payments changed as the API sees a "
        "change; latency from each change's commit to its client holding the final payment.",
        "",
        *table(
            f"measure | {waits['held']:,} long polls | {streams['held']:,} streams",
            zip(MEASURES, _column(waits), _column(streams), strict=True),
        ),
    ]
