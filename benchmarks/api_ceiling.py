"""Payment creation against its ceiling: ``svc api`` next to the naive API, same run.

The naive API (``benchmarks.naive_api``: form, one ``INSERT`` in a transaction, one confirmed
publish, JSON) and the service's ``POST /v1/payments`` (a live key, its rate limit counted
under a limit far above the rate, the idempotency record, payment + event + outbox in one
transaction, the publish, the answer) take the same load, at 32 and at 128 requests in flight,
in rounds that alternate which goes first, so both see the same machine. Rows are medians by
payments/s. While they are timed, each runs alone with its database and broker: nothing
consumes the naive API's messages, and the service's dispatcher and scheduler start after
the timed rounds, to deliver every ``payment.created`` the service made to the receiver
(the check that nothing was lost; delivery's own cost is measured by the delivery rows).
Then a counting pass sends a few hundred payments to each through a proxy in front of
PostgreSQL (``benchmarks.pgwire``): statements and round trips per payment.
"""

from __future__ import annotations

import logging
from typing import Any

from benchmarks.naive_api import NaiveApi, drop, prepare
from benchmarks.payments import WEBHOOK, Posted, created_events, post_payments
from benchmarks.pgwire import PgCounter
from benchmarks.receipts import percentile
from benchmarks.runs import profiled
from benchmarks.sections import Goal, Run
from benchmarks.service import ServiceSystem
from harness.sampling import cpu_by_process, cpu_used
from svc.orgs import Scope

KEY = "api-ceiling"
log = logging.getLogger(__name__)

CONCURRENCIES = (32, 128)
TARGET = 0.7
NAIVE = "naive API"
SERVICE = "svc api"
RECEIVER_PATH = "apiceiling"
LIVE_LIMIT = "1000000"
"""Requests a second of a live key: far above any rate here, so the limit counts, never refuses."""


def _sizes(smoke: bool) -> dict[str, int]:
    if smoke:
        return {"count": 30, "rounds": 1, "warm_up": 10, "counted": 20}
    return {"count": 3000, "rounds": 3, "warm_up": 300, "counted": 500}


async def run(run: Run) -> dict[str, Any]:
    sizes = _sizes(run.smoke)
    database_url = run.stores.database_url
    await prepare(database_url)
    env = {"SVC_RATE_LIMIT_LIVE": LIVE_LIMIT, "SVC_RATE_LIMIT_TEST": "0"}
    system = ServiceSystem(
        run.procs, run.stores, 0, "apiceiling", env, scheduler=False, api=True, label=SERVICE
    )
    naive = NaiveApi(run.procs, database_url, run.stores.amqp_url)
    try:
        await system.open()
        key, org = await _live_shop(system, run)
        await system.start()
        await naive.start()
        for url in (naive.url, system.api_url):  # pools open, key cached, endpoint cached
            for concurrency in CONCURRENCIES:
                await post_payments(url, key, sizes["warm_up"], concurrency)
        runs, created = await _rounds(run, system, naive, key, sizes)
        await system.add_roles("scheduler", "dispatcher0")
        delivery = await _deliveries(run, system, org, created)
        await naive.stop()
        counted = await _counted(run, system, key, sizes["counted"])
    finally:
        await naive.close()
        await system.close()
        await drop(database_url)
    return {"sizes": sizes, "runs": runs, **_medians(runs), **delivery, "counted": counted}


async def _live_shop(system: ServiceSystem, run: Run) -> tuple[str, str]:
    """A live key of a new organisation whose one live endpoint takes ``payment.created``."""
    key, scope = await system.ctx.api_keys.create("live", f"{system.name}-live")
    url = run.bench.receiver.url(f"/{RECEIVER_PATH}/e0")
    await system.ctx.endpoints.create(system.ctx.db, Scope(scope.org, "live"), url, [WEBHOOK])
    return key, scope.org


async def _rounds(
    run: Run, system: ServiceSystem, naive: NaiveApi, key: str, sizes: dict[str, int]
) -> tuple[list[dict[str, Any]], list[str]]:
    """Every timed run, naive and service alternating first; and the payments the service
    created."""
    runs: list[dict[str, Any]] = []
    created: list[str] = []
    shared = {"postgres": run.bench.postgres_pids(), "broker": run.bench.broker_pids()}
    for round_ in range(sizes["rounds"]):
        for concurrency in CONCURRENCIES:
            order = [NAIVE, SERVICE] if round_ % 2 == 0 else [SERVICE, NAIVE]
            for name in order:
                if name == NAIVE:
                    url, groups = naive.url, {"api": naive.pids, **shared}
                else:
                    url, groups = system.api_url, {**system.cpu_groups(), **shared}
                last = round_ == sizes["rounds"] - 1 and concurrency == CONCURRENCIES[0]
                spied = run.profile_dir if name == SERVICE and last else None
                async with profiled(system, spied, f"api-ceiling-{concurrency}"):
                    before = {g: cpu_by_process(pids) for g, pids in groups.items()}
                    posted, wall = await post_payments(url, key, sizes["count"], concurrency)
                    after = {g: cpu_by_process(pids) for g, pids in groups.items()}
                cpu = {g: cpu_used(before[g], after[g]) for g in groups}
                runs.append(_row(name, round_, concurrency, posted, wall, cpu))
                if name == SERVICE:
                    created += [p.payment_id for p in posted if p.payment_id]
                log.info("api-ceiling: %s", runs[-1]["summary"])
    return runs, created


def _row(
    name: str,
    round_: int,
    concurrency: int,
    posted: list[Posted],
    wall: float,
    cpu: dict[str, float],
) -> dict[str, Any]:
    ok = [p for p in posted if p.status == 201]
    ms = [p.seconds * 1000 for p in posted]
    statuses: dict[str, int] = {}
    for p in posted:
        statuses[str(p.status)] = statuses.get(str(p.status), 0) + 1
    rate = len(ok) / wall if wall > 0 else 0.0
    row: dict[str, Any] = {
        "system": name,
        "round": round_,
        "concurrency": concurrency,
        "requests": len(posted),
        "created": len(ok),
        "statuses": statuses,
        "rate_per_s": round(rate, 1),
        "p50_ms": round(percentile(ms, 50), 1),
        "p99_ms": round(percentile(ms, 99), 1),
        "cpu_us_per_payment": {
            g: round(used * 1e6 / len(ok)) if ok else None for g, used in cpu.items()
        },
        # Every measured process together: on a machine of few cores the two compete for
        # the same CPU, so this, not the API's own share, sets what each answers per second.
        "cpu_us_per_payment_total": round(sum(cpu.values()) * 1e6 / len(ok)) if ok else None,
    }
    row["summary"] = (
        f"{name} at {concurrency}: {rate:,.0f}/s, p50 {row['p50_ms']} ms, p99 {row['p99_ms']} ms"
    )
    return row


def _medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median run of each system and concurrency (by payments/s; of an even count the
    worse middle one) and the service's ratio to the naive API at each concurrency."""
    rows: dict[str, dict[str, Any]] = {}
    ratios: dict[str, float | None] = {}
    for concurrency in CONCURRENCIES:
        for name in (NAIVE, SERVICE):
            found = sorted(
                (r for r in runs if r["system"] == name and r["concurrency"] == concurrency),
                key=lambda r: r["rate_per_s"],
            )
            if found:
                rows[f"{name}@{concurrency}"] = found[(len(found) - 1) // 2]
        naive = rows.get(f"{NAIVE}@{concurrency}")
        service = rows.get(f"{SERVICE}@{concurrency}")
        ratios[str(concurrency)] = (
            round(service["rate_per_s"] / naive["rate_per_s"], 3)
            if naive and service and naive["rate_per_s"]
            else None
        )
    per_round = {
        str(c): [
            round(s["rate_per_s"] / n["rate_per_s"], 3)
            for n in runs
            for s in runs
            if n["system"] == NAIVE
            and s["system"] == SERVICE
            and n["concurrency"] == s["concurrency"] == c
            and n["round"] == s["round"]
            and n["rate_per_s"]
        ]
        for c in CONCURRENCIES
    }
    return {"rows": rows, "ratio": ratios, "ratio_by_round": per_round}


async def _deliveries(
    run: Run, system: ServiceSystem, org: str, created: list[str]
) -> dict[str, Any]:
    """Wait for every created payment's ``payment.created`` at the receiver."""
    events = await created_events(system, org)
    expected = {events[p][0] for p in created if p in events}
    arrived, _ = await run.bench.wait(RECEIVER_PATH, expected, max(60.0, len(expected) / 100))
    delivered = sum(1 for p in created if p in events and events[p][0] in arrived)
    return {
        "created": len(created),
        "events": sum(1 for p in created if p in events),
        "delivered": delivered,
        "missing": len(created) - delivered,
    }


async def _counted(run: Run, system: ServiceSystem, key: str, count: int) -> dict[str, Any]:
    """PostgreSQL statements and round trips per payment of each, through the counting proxy
    (one process of each, 32 in flight, after the timed runs)."""
    found: dict[str, Any] = {}
    async with PgCounter(run.stores.database_url) as counter:
        naive = NaiveApi(run.procs, counter.url, run.stores.amqp_url, "naive-api-counted")
        try:
            await naive.start()
            await post_payments(naive.url, key, 20, CONCURRENCIES[0])  # connections opened
            counter.reset()
            posted, _ = await post_payments(naive.url, key, count, CONCURRENCIES[0])
            found[NAIVE] = _per_payment(counter.reset().__dict__, posted)
        finally:
            await naive.close()
        env = {
            **system.env,
            "SVC_DATABASE_URL": counter.url,
            "SVC_NAMESPACE": system.settings.namespace + "c",
        }
        counting = ServiceSystem(
            run.procs, run.stores, 0, "apiceiling-counted", env, scheduler=False, api=True
        )
        try:
            await counting.open()
            await counting.start()
            await post_payments(counting.api_url, key, 20, CONCURRENCIES[0])
            counter.reset()
            posted, _ = await post_payments(counting.api_url, key, count, CONCURRENCIES[0])
            found[SERVICE] = _per_payment(counter.reset().__dict__, posted)
        finally:
            await counting.close()
    return found


def _per_payment(counts: dict[str, Any], posted: list[Posted]) -> dict[str, Any]:
    made = sum(1 for p in posted if p.status == 201) or 1
    return {
        "payments": made,
        "statements_per_payment": round(counts["statements"] / made, 2),
        "round_trips_per_payment": round(counts["round_trips"] / made, 2),
        "messages": counts["by_kind"],
    }


def targets(result: dict[str, Any] | None) -> list[Goal]:
    ratio = (result or {}).get("ratio", {})
    goals = [
        Goal(
            f"payment creation ÷ {NAIVE}, {c} in flight",
            ratio.get(str(c)),
            f"≥ {TARGET}",
            lambda v: v >= TARGET,
        )
        for c in CONCURRENCIES
    ]
    missing = None if result is None or "missing" not in result else float(result["missing"])
    goals.append(Goal(f"payment.created missing ({NAIVE} run)", missing, "= 0", lambda v: v == 0))
    return goals


def markdown(result: dict[str, Any] | None) -> list[str]:
    if not result or not result.get("rows"):
        return []
    rows = result["rows"]
    sizes = result["sizes"]
    counted = result.get("counted", {})
    lines = [
        f"**Payment creation against the naive API**: {sizes['count']:,} payments per run, "
        f"{sizes['rounds']} rounds alternating which goes first; each row the median run by "
        "payments/s. The naive API: one aiohttp handler on uvloop, form, one `INSERT` in a "
        "transaction (asyncpg), one publish with a confirm (aio-pika), JSON. `svc api`: a live "
        "key with its rate limit counted, the idempotency record, payment + event + outbox in "
        "one transaction, the publish, the answer. Each runs alone with PostgreSQL and "
        "RabbitMQ while timed; the service's scheduler and dispatcher start after the timed "
        f"runs and deliver every `payment.created` ({result['delivered']:,} of "
        f"{result['created']:,} delivered). "
        "Statements and round trips per payment from a counting pass through a proxy in "
        "front of PostgreSQL.",
        "",
        "| system | in flight | payments/s | ÷ naive API | p50 ms | p99 ms "
        "| CPU µs/payment by process | CPU µs/payment, all "
        "| PostgreSQL statements / round trips per payment | every run, payments/s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for concurrency in CONCURRENCIES:
        for name in (NAIVE, SERVICE):
            row = rows.get(f"{name}@{concurrency}")
            if row is None:
                continue
            ratio = 1.0 if name == NAIVE else result["ratio"].get(str(concurrency))
            cpu = " + ".join(
                f"{v:,} {g}" for g, v in row["cpu_us_per_payment"].items() if v is not None
            )
            count = counted.get(name)
            pg = (
                f"{count['statements_per_payment']} / {count['round_trips_per_payment']}"
                if count
                else "–"
            )
            every = " · ".join(
                f"{r['rate_per_s']:,.0f}"
                for r in result["runs"]
                if r["system"] == name and r["concurrency"] == concurrency
            )
            lines.append(
                f"| {name} | {concurrency} | {row['rate_per_s']:,.0f} | "
                f"{'–' if ratio is None else f'{ratio:.2f}'} | {row['p50_ms']} | "
                f"{row['p99_ms']} | {cpu} | {_number(row['cpu_us_per_payment_total'])} | {pg} "
                f"| {every} |"
            )
    lines.append("")
    return lines


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"
