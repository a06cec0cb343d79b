"""Payment creation against its ceiling: ``svc api`` next to the naive API at 32 and 128
requests in flight, in rounds alternating which goes first, each alone with its database and
broker while timed; rows are medians. The service's scheduler and dispatcher start after
the timed rounds and deliver every ``payment.created`` it made (the check nothing was lost).
"""

from __future__ import annotations

import logging
from typing import Any

from benchmarks.figures import fmt
from benchmarks.naive_api import NaiveApi
from benchmarks.payments import WEBHOOK, Posted, created_events, post_payments
from benchmarks.receipts import percentile
from benchmarks.repeats import median_run
from benchmarks.sections import Goal, Run, table
from benchmarks.service import ServiceSystem
from harness.sampling import CpuTrace
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


async def run(run: Run) -> dict[str, Any]:
    count, rounds, warm_up = (30, 1, 10) if run.smoke else (3000, 3, 300)
    env = {"SVC_RATE_LIMIT_LIVE": LIVE_LIMIT, "SVC_RATE_LIMIT_TEST": "0"}
    system = ServiceSystem(
        run.procs, run.stores, 0, "apiceiling", env, scheduler=False, api=True, label=SERVICE
    )
    naive = NaiveApi(run.procs, run.stores.database_url, run.stores.amqp_url)
    try:
        await system.open()
        key, org = await _live_shop(system, run)
        await system.start()
        await naive.start()
        for url in (naive.url, system.api_url):  # pools open, key cached, endpoint cached
            for concurrency in CONCURRENCIES:
                await post_payments(url, key, warm_up, concurrency)
        runs, created = await _rounds(run, system, naive, key, count, rounds)
        await system.add_roles("scheduler", "dispatcher0")
        delivery = await _deliveries(run, system, org, created)
    finally:
        await naive.close()
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
    return {"count": count, "rounds": rounds, "rows": rows, "ratio": ratio, **delivery}


async def _live_shop(system: ServiceSystem, run: Run) -> tuple[str, str]:
    """A live key of a new organisation whose one live endpoint takes ``payment.created``."""
    key, scope = await system.ctx.api_keys.create("live", f"{system.name}-live")
    url = run.bench.receiver.url(f"/{RECEIVER_PATH}/e0")
    await system.ctx.endpoints.create(system.ctx.db, Scope(scope.org, "live"), url, [WEBHOOK])
    return key, scope.org


async def _rounds(
    run: Run, system: ServiceSystem, naive: NaiveApi, key: str, count: int, rounds: int
) -> tuple[list[dict[str, Any]], list[str]]:
    """Every timed run, naive and service alternating first; and the payments the service
    created."""
    runs: list[dict[str, Any]] = []
    created: list[str] = []
    shared = {"postgres": run.bench.postgres_pids(), "broker": run.bench.broker_pids()}
    for round_ in range(rounds):
        for concurrency in CONCURRENCIES:
            for name in [NAIVE, SERVICE] if round_ % 2 == 0 else [SERVICE, NAIVE]:
                if name == NAIVE:
                    url, groups = naive.url, {"api": naive.pids, **shared}
                else:
                    url, groups = system.api_url, {**system.cpu_groups(), **shared}
                trace = CpuTrace(groups)
                trace.sample()
                posted, wall = await post_payments(url, key, count, concurrency)
                trace.sample()
                runs.append(_row(name, concurrency, posted, wall, trace.spent()))
                if name == SERVICE:
                    created += [p.payment_id for p in posted if p.payment_id]
                log.info("api-ceiling: %s at %d: %.0f/s", name, concurrency, runs[-1]["rate_per_s"])
    return runs, created


def _row(
    name: str, concurrency: int, posted: list[Posted], wall: float, cpu: dict[str, float]
) -> dict[str, Any]:
    made = sum(1 for p in posted if p.status == 201)
    ms = [p.seconds * 1000 for p in posted]
    return {
        "system": name,
        "concurrency": concurrency,
        "requests": len(posted),
        "created": made,
        "rate_per_s": round(made / wall, 1) if wall > 0 else 0.0,
        "p50_ms": round(percentile(ms, 50), 1),
        "p99_ms": round(percentile(ms, 99), 1),
        "cpu_us_per_payment": {g: round(s * 1e6 / made) if made else None for g, s in cpu.items()},
        # Every measured process together: on a machine of few cores they compete for the
        # same CPU, so this, not the API's own share, sets what each answers per second.
        "cpu_us_per_payment_total": round(sum(cpu.values()) * 1e6 / made) if made else None,
    }


async def _deliveries(
    run: Run, system: ServiceSystem, org: str, created: list[str]
) -> dict[str, Any]:
    """Wait for every created payment's ``payment.created`` at the receiver."""
    events = await created_events(system, org)
    expected = {events[p][0] for p in created if p in events}
    arrived = await run.bench.wait(RECEIVER_PATH, expected, max(60.0, len(expected) / 100))
    delivered = sum(1 for p in created if p in events and events[p][0] in arrived)
    return {"created": len(created), "delivered": delivered, "missing": len(created) - delivered}


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
