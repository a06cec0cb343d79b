"""Holding long polls and payment streams on one ``svc api`` process, and waking some of them.

One phase per kind (``waits``: ``GET /v1/payments/{id}?wait=30``; ``streams``:
``GET /v1/payments/{id}/stream``), each on a fresh ``svc api`` process of its own namespace,
so each kind's memory is measured alone:

1. the payments are created in PostgreSQL through ``svc.payments.flow`` (many per
   transaction: their creation is not what is measured), then the API starts; the database
   must be the run's own (``create_payments``);
2. client processes (``benchmarks.longpoll.clients``) open one wait or stream per payment,
   in rounds of ``batch`` until the API's gauge ``svc_long_polls_open`` shows each round;
3. ``changes`` of the payments are canceled, spread evenly over ``spread_s`` seconds, each
   as the API sees a change: in its own transaction, the payment locked and updated through
   the service's store, then its wake-up signal sent as the service sends it. The change's
   event, outbox row and publish are left out: in service another process makes the change
   and pays for them (on its own cores, and RabbitMQ on its own), while here every process
   shares the two cores the API has, and through ``svc.payments.flow.move`` they were about
   two thirds of the producer's CPU per change. That a move sends the signal before the
   publish is a test of its own (``tests/integration/test_stores.py``);
4. each change's latency runs from its commit (an effect registered first in its unit, so
   it runs right after the commit, before the signal) to the moment its client received the
   final payment (``time.monotonic``, one clock for all processes); a second stamp right
   after the signal splits it into commit to signal sent and signal sent to answer.

The API's VmRSS is read before the clients connect, with everything open, and sampled for
its peak while the changes are answered; CPU seconds of the API, the clients, this process
(the one changing payments) and PostgreSQL are charged to the window of the changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import aiohttp
import psutil

from benchmarks.longpoll import clients
from benchmarks.longpoll.limits import open_files_limit, raise_limits, rss_mib
from benchmarks.longpoll.plan import Sizes, latencies_ms, picked, rounds, shares, spread, summary
from benchmarks.runs import profiled
from benchmarks.service import ServiceSystem, Stores
from benchmarks.workload import chunks
from harness.processes import Processes
from harness.sampling import RssSampler, cpu_by_process, cpu_used, postgres_pids
from svc.context import Context, open_context
from svc.orgs import Scope
from svc.payments import flow
from svc.payments.model import allowed

log = logging.getLogger(__name__)

CREATE_BATCH = 250
CREATE_UNITS = 4
"""Payments per transaction, and transactions at once, when creating the payments."""
OPEN_PATIENCE = 30.0
"""Seconds one round of opens may take before the run fails."""
ANSWER_PATIENCE = 15.0
"""Seconds after the last change within which every changed payment must be answered."""
CHANGER_POOL = 32
"""Connections of this process's own context for the changes (the API keeps its default):
a burst of changes must not queue behind ten connections."""
GAUGE_EVERY = 0.25
"""Seconds between two reads of the API's gauge: a scrape of ``/metrics`` costs its loop."""


class Clients:
    """The client processes (spawned, so none inherits this process's event loop)."""

    def __init__(self, count: int) -> None:
        context = multiprocessing.get_context("spawn")
        self._pipes: list[Connection] = []
        self.processes = []
        for _ in range(count):
            ours, theirs = context.Pipe()
            process = context.Process(target=clients.main, args=(theirs,), daemon=True)
            process.start()
            theirs.close()
            self._pipes.append(ours)
            self.processes.append(process)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.processes if p.pid is not None]

    async def _ask(self, pipe: Connection, command: str, argument: Any = None) -> Any:
        await asyncio.to_thread(pipe.send, (command, argument))
        return await asyncio.to_thread(pipe.recv)

    async def ask_all(self, command: str, arguments: Sequence[Any] | None = None) -> list[Any]:
        args = arguments if arguments is not None else [None] * len(self._pipes)
        return list(
            await asyncio.gather(
                *(self._ask(pipe, command, a) for pipe, a in zip(self._pipes, args, strict=True))
            )
        )

    async def close(self) -> None:
        for pipe in self._pipes:
            with contextlib.suppress(OSError):
                pipe.send(("exit", None))
        for process in self.processes:
            await asyncio.to_thread(process.join, 10)
            if process.is_alive():
                process.kill()


async def create_payments(ctx: Context, scope: Scope, count: int) -> list[str]:
    """``count`` pending online payments of ``scope``, many per transaction.

    The transactions' effects are not run: the ``payment.created`` events stay in the
    outbox of the run's own database, where no scheduler sweeps, and no listener exists yet
    to be woken. Publishing them one confirm at a time would take longer than the run."""
    gate = asyncio.Semaphore(CREATE_UNITS)

    async def some(seqs: Sequence[int]) -> list[str]:
        async with gate, ctx.db.transaction() as unit:
            made = [
                await flow.create_online(
                    ctx, unit, scope, 2450, "CHF", "online", "https://shop.example/done"
                )
                for _ in seqs
            ]
        return [payment.id for payment in made]

    parts = await asyncio.gather(*(some(part) for part in chunks(range(count), CREATE_BATCH)))
    return [payment_id for part in parts for payment_id in part]


@dataclass
class Changes:
    """When each changed payment's transaction committed, and when its wake-up signal was
    sent."""

    committed: dict[str, float] = field(default_factory=dict)
    signalled: dict[str, float] = field(default_factory=dict)


async def change(ctx: Context, ids: Sequence[str], seconds: float) -> Changes:
    """Cancel ``ids`` spread over ``seconds``, each in its own transaction: the payment locked
    and updated through the service's store, its wake-up signal sent after the commit as the
    service sends it. The event of the change, its outbox row and its publish are left out:
    they are the work of the process making the change, not of the API (see the module)."""
    changes = Changes()
    offsets = spread(len(ids), seconds)
    gate = asyncio.Semaphore(ctx.settings.database_pool_size)  # not the pool's acquire timeout
    start = time.monotonic()

    async def one(payment_id: str, offset: float) -> None:
        await asyncio.sleep(max(0.0, start + offset - time.monotonic()))

        async def committed() -> None:
            changes.committed[payment_id] = time.monotonic()

        async def signalled() -> None:
            changes.signalled[payment_id] = time.monotonic()

        async with gate, ctx.unit() as unit:
            unit.after_commit(committed)  # the first effect: runs right after the commit
            payment = await ctx.payments.lock(unit, payment_id)
            assert payment is not None and allowed(payment.status, "canceled"), payment_id
            canceled = payment.moved("canceled", flow.now_ms(), cancel_reason="requested")
            await ctx.payments.update(unit, canceled)
            flow.wake_after(ctx, unit, canceled)
            unit.after_commit(signalled)

    await asyncio.gather(*(one(p, at) for p, at in zip(ids, offsets, strict=True)))
    return changes


async def open_gauge(session: aiohttp.ClientSession, metrics_url: str) -> float:
    """The API's ``svc_long_polls_open`` gauge (waits and streams it holds now)."""
    async with session.get(metrics_url) as response:
        for line in (await response.text()).splitlines():
            if line.startswith("svc_long_polls_open "):
                return float(line.split()[1])
    return 0.0


async def until_open(metrics_url: str, pool: Clients, count: int, patience: float) -> None:
    """Wait until the API holds ``count`` waits or streams, less those refused; after
    ``patience`` go on with what is open (the shortfall shows as refused or unanswered)."""
    async with aiohttp.ClientSession() as session:
        deadline = time.monotonic() + patience
        while time.monotonic() < deadline:
            refused = sum(r for _, _, r in await pool.ask_all("answered"))
            if await open_gauge(session, metrics_url) + refused >= count:
                return
            await asyncio.sleep(GAUGE_EVERY)
    log.warning("%d waits or streams not open after %.0f s; going on", count, patience)


async def until_answered(pool: Clients, count: int, patience: float) -> None:
    """Wait until the clients together got ``count`` final answers, or ``patience`` ran out."""
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        counts = await pool.ask_all("answered")
        if sum(answered for answered, _, _ in counts) >= count:
            return
        await asyncio.sleep(0.02)


def _cpu(groups: dict[str, list[int]]) -> dict[str, dict[int, float]]:
    readings = {group: cpu_by_process(pids) for group, pids in groups.items() if group != "harness"}
    times = psutil.Process().cpu_times()  # this process alone, not the API it started
    readings["harness"] = {os.getpid(): times.user + times.system}
    return readings


async def phase(
    procs: Processes,
    stores: Stores,
    pool: Clients,
    kind: str,
    count: int,
    sizes: Sizes,
    profile_dir: Path | None = None,
) -> dict[str, Any]:
    """Hold ``count`` waits or streams (``kind``) on a fresh API process and change
    ``sizes.changes`` of their payments; see the module's docstring."""
    system = ServiceSystem(
        procs, stores, 0, f"longpolls-{kind}", scheduler=False, api=True, label="svc, 1 api"
    )
    try:
        await system.open()
        changer = await system._stack.enter_async_context(
            open_context(replace(system.settings, database_pool_size=CHANGER_POOL))
        )
        key, scope = await system.ctx.api_keys.create("test", f"longpolls-{kind}")
        created = time.monotonic()
        ids = await create_payments(system.ctx, scope, count)
        spare = await create_payments(system.ctx, scope, CHANGER_POOL * 2)
        create_s = time.monotonic() - created
        log.info("%s: %d payments created in %.1f s", kind, count, create_s)
        await system.start()
        (api_pid,) = system.cpu_groups()["api"]
        rss_before = rss_mib(api_pid)
        opening = time.monotonic()
        held = 0
        async with profiled(system, profile_dir, f"longpolls-{kind}-opening"):
            for parts in rounds(shares(ids, len(pool.processes)), sizes.batch):
                await pool.ask_all("open", [(system.api_url, key, kind, p) for p in parts])
                held += sum(len(part) for part in parts)
                await until_open(system.metrics_urls()["api"], pool, held, OPEN_PATIENCE)
        open_s = time.monotonic() - opening
        log.info("%s: %d open in %.1f s", kind, count, open_s)
        # Warm-up: every connection of the changer's pools open before the measured changes.
        await change(changer, spare, 0.0)
        await asyncio.sleep(sizes.settle_s)  # the last round's reads done, memory as it stays
        rss_open = rss_mib(api_pid)
        result = await _changes(system, changer, pool, ids, sizes, kind, profile_dir, api_pid)
        tallies: list[clients.Tally] = await pool.ask_all("finish")
        log.info("%s: changes answered, p99 window %.1f s", kind, result["window_s"])
    finally:
        await system.close()
    answered = {p: at for tally in tallies for p, at in tally.answered.items()}
    reasons: dict[str, int] = {}
    for tally in tallies:
        for reason, times in tally.reasons.items():
            reasons[reason] = reasons.get(reason, 0) + times
    committed, signalled = result.pop("committed"), result.pop("signalled")
    return {
        "kind": kind,
        "held": count,
        "clients": len(pool.processes),
        "api_open_files_limit": result.pop("nofile"),
        "payments_created_per_s": round(count / create_s) if create_s > 0 else None,
        "open_s": round(open_s, 2),
        "opened_per_s": round(count / open_s) if open_s > 0 else None,
        "rss_before_mib": rss_before,
        "rss_open_mib": rss_open,
        "kib_per_connection": round((rss_open - rss_before) * 1024 / count, 1),
        **result,
        "answered": sum(1 for p in committed if p in answered),
        "latency": summary(latencies_ms(committed, answered)),
        "signal_to_answer": summary(latencies_ms(signalled, answered)),
        "streams_opened": sum(t.opened for t in tallies) if kind == "streams" else None,
        "refused": sum(t.refused for t in tallies),
        "refused_reasons": reasons,
        "expired": sum(t.expired for t in tallies),
    }


async def _changes(
    system: ServiceSystem,
    changer: Context,
    pool: Clients,
    ids: list[str],
    sizes: Sizes,
    kind: str,
    profile_dir: Path | None,
    api_pid: int,
) -> dict[str, Any]:
    """The window of the changes: commit times, answers awaited, peak RSS and CPU."""
    nofile = open_files_limit(api_pid)
    targets = picked(ids, sizes.changes)
    groups = {
        "api": [api_pid],
        "clients": pool.pids,
        "harness": [],
        "postgres": postgres_pids(system.settings.database_url),
    }
    sampler = RssSampler([api_pid], interval=0.05)
    sampler.start()
    before = _cpu(groups)
    began = time.monotonic()
    try:
        async with profiled(system, profile_dir, f"longpolls-{kind}"):
            changes = await change(changer, targets, sizes.spread_s)
            changed_s = time.monotonic() - began
            await until_answered(pool, len(targets), ANSWER_PATIENCE)
    finally:
        await sampler.stop()
    window = time.monotonic() - began
    after = _cpu(groups)
    commits = sorted(changes.committed.values())
    return {
        "committed": changes.committed,
        "signalled": changes.signalled,
        "commit_to_signal": summary(latencies_ms(changes.committed, changes.signalled)),
        "nofile": nofile,
        "changes": len(targets),
        "changes_committed_s": round(commits[-1] - commits[0], 3) if commits else None,
        "changes_sent_s": round(changed_s, 3),
        "window_s": round(window, 3),
        "rss_peak_mib": sampler.peak_mb,
        "cpu_s": {g: round(cpu_used(before[g], after[g]), 3) for g in groups},
    }


async def measure(
    procs: Processes, stores: Stores, sizes: Sizes, profile_dir: Path | None = None
) -> dict[str, Any]:
    """Both phases, waits then streams; each phase's API process and namespace its own."""
    limits = raise_limits(max(sizes.waits, sizes.streams))
    pool = Clients(sizes.clients)
    found: dict[str, Any] = {}
    try:
        for kind, count in (("waits", sizes.waits), ("streams", sizes.streams)):
            try:
                found[kind] = await phase(procs, stores, pool, kind, count, sizes, profile_dir)
            except Exception as exc:  # the other phase still runs; its targets still count
                log.exception("%s: the phase failed", kind)
                found[kind] = {"kind": kind, "held": count, "error": repr(exc)}
    finally:
        await pool.close()
    return {
        "sizes": {
            "waits": sizes.waits,
            "streams": sizes.streams,
            "changes": sizes.changes,
            "spread_s": sizes.spread_s,
            "clients": sizes.clients,
            "batch": sizes.batch,
        },
        "limits": limits,
        **found,
    }
