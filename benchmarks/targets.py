"""The targets of ``make bench``: each recorded figure with its goal and whether the run met
it, as the results JSON's ``targets`` list (rendered by ``benchmarks.report``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.figures import by_system, ratio
from benchmarks.repeats import round_ratio
from benchmarks.sections import sections

RSS_LIMIT_MB = 150
OUTBOX_GOAL = 5_000
LISTING_P99_MS = 20
CPU = "cpu_us_per_delivery_"


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target of the issue with the measured value; ``met`` is None when not measured."""
    rows_by_system = by_system(results["throughput"])
    rate = {name: row.get("rate_per_s") for name, row in rows_by_system.items()}
    lag = by_system(results["latency"])
    celery_rates = [r for n in ("celery-prefork", "celery-gevent") if (r := rate.get(n))]
    celery = max(celery_rates) if celery_rates else None
    iso = results.get("isolation")
    healthy = lag.get("svc1", {}).get("lag_p99_ms")
    rss = [
        r.get("peak_rss_mb")
        for r in [*results["throughput"], *results["latency"], iso, results.get("storm")]
        if r and r.get("peak_rss_mb")
    ]
    storm = results.get("storm")
    pay = results.get("payments")
    slow = rows_by_system.get("svc1-slow", {})
    slow_ms = round(results["plan"].get("slow_delay", 0.2) * 1000)
    swept = results.get("outbox") or {}
    pages = (results.get("listing") or {}).get("requests") or []

    def paired(top: str, bottom: str, key: str, bottom_key: str | None = None) -> float | None:
        """One row's ``key`` over another's, round by round (``repeats.round_ratio``)."""
        return round_ratio(
            rows_by_system.get(top, {}), rows_by_system.get(bottom, {}), key, bottom_key
        )

    rows: list[tuple[str, float | None, str, Callable[[float], bool]]] = [
        (
            "svc 1 dispatcher ÷ naive 1 process",
            ratio(rate.get("svc1"), rate.get("naive1")),
            "≥ 0.85",
            lambda v: v >= 0.85,
        ),
        (
            "svc 2 dispatchers ÷ svc 1 dispatcher",
            ratio(rate.get("svc2"), rate.get("svc1")),
            "> 1",
            lambda v: v > 1,
        ),
        # End to end against the naive consumer round by round: the two runs of a round saw
        # the same machine.
        (
            "svc 1 dispatcher end to end ÷ naive 1 process",
            paired("svc1-e2e", "naive1", "rate_per_s"),
            "≥ 0.9",
            lambda v: v >= 0.9,
        ),
        (
            "svc 1 dispatcher CPU per delivery end to end ÷ naive 1 process",
            paired("svc1-e2e", "naive1", f"{CPU}dispatcher", f"{CPU}worker"),
            "≤ 1.1",
            lambda v: v <= 1.1,
        ),
        (
            "svc 2 dispatchers end to end ÷ naive 2 processes",
            paired("svc2-e2e", "naive2", "rate_per_s"),
            "≥ 0.9",
            lambda v: v >= 0.9,
        ),
        (
            "svc 2 dispatchers end to end ÷ 1 dispatcher end to end",
            ratio(rate.get("svc2-e2e"), rate.get("svc1-e2e")),
            "> 1",
            lambda v: v > 1,
        ),
        (
            f"svc 1 dispatcher, {slow_ms} ms receivers ÷ svc 1 dispatcher",
            ratio(rate.get("svc1-slow"), rate.get("svc1")),
            "≥ 0.85",
            lambda v: v >= 0.85,
        ),
        (
            f"svc 1 dispatcher, {slow_ms} ms receivers: dispatcher peak RSS, MB",
            slow.get("peak_rss_mb") or None,
            f"≤ {RSS_LIMIT_MB}",
            lambda v: v <= RSS_LIMIT_MB,
        ),
        (
            "outbox catch-up, events/s per scheduler",
            swept.get("rate_per_s"),
            f"≥ {OUTBOX_GOAL:,}",
            lambda v: v >= OUTBOX_GOAL,
        ),
        # Celery prefork and Dramatiq run two worker processes: compare two dispatchers.
        (
            "svc 2 dispatchers ÷ best Celery (2 processes each)",
            ratio(rate.get("svc2"), celery),
            "≥ 4",
            lambda v: v >= 4,
        ),
        (
            "svc 2 dispatchers ÷ Dramatiq (2 processes each)",
            ratio(rate.get("svc2"), rate.get("dramatiq")),
            "≥ 2",
            lambda v: v >= 2,
        ),
        (
            "healthy p99 with 20 % hanging ÷ all healthy",
            ratio(iso.get("lag_p99_ms") if iso else None, healthy),
            "≤ 1.5",
            lambda v: v <= 1.5,
        ),
        (
            "dispatcher peak RSS, MB",
            max(rss) if rss else None,
            f"≤ {RSS_LIMIT_MB}",
            lambda v: v <= RSS_LIMIT_MB,
        ),
        (
            "retry storm: events missing after recovery",
            storm.get("missing") if storm else None,
            "0",
            lambda v: v == 0,
        ),
        (
            "payment creation: payment.created webhooks missing",
            pay["created"] - pay["delivered"] if pay else None,
            "0",
            lambda v: v == 0,
        ),
        (
            "payment creation with per-key rate limiting on ÷ off",
            (pay.get("rate_limit") or {}).get("limited_ratio") if pay else None,
            "≥ 0.95",
            lambda v: v >= 0.95,
        ),
        (
            "listing pages (first and deep): slowest p99, ms",
            max(page["p99_ms"] for page in pages) if pages else None,
            f"≤ {LISTING_P99_MS}",
            lambda v: v <= LISTING_P99_MS,
        ),
        (
            "listing pages: plans with a Seq Scan, a big Sort or no index",
            sum(1 for page in pages if not page["plan_ok"]) if pages else None,
            "0",
            lambda v: v == 0,
        ),
    ]
    for section in sections():
        rows += [
            (goal.name, goal.value, goal.goal, goal.check)
            for goal in section.targets(results.get(section.KEY))
        ]
    return [
        {
            "target": name,
            "value": value,
            "goal": goal,
            "met": None if value is None else bool(check(value)),
        }
        for name, value, goal, check in rows
    ]
