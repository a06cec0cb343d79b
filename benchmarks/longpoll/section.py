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
import resource
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import aiohttp
import psutil

from benchmarks.figures import fmt
from benchmarks.longpoll.clients import Tally, clients
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
from svc.payments.model import allowed

KEY = "longpolls"
log = logging.getLogger(__name__)

P99_MS = 200
RSS_MIB = 400
KINDS = ("waits", "streams")
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
