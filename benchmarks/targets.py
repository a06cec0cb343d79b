"""The targets of ``make bench``: each recorded figure, its goal and whether the run met it."""

from __future__ import annotations

from typing import Any

from benchmarks.figures import by_system, ratio, round_ratio
from benchmarks.sections import goal, sections

RSS_LIMIT_MB = 150
CPU = "cpu_us_per_delivery_"


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target with its measured value and goal; ``met`` is None when not measured."""
    rows = by_system(results["throughput"])
    rate = {name: row.get("rate_per_s") for name, row in rows.items()}
    iso, storm = results.get("isolation"), results.get("storm")
    healthy = by_system(results["latency"]).get("svc1", {}).get("lag_p99_ms")
    peaks = [*results["throughput"], *results["latency"], iso, storm]
    rss = [row["peak_rss_mb"] for row in peaks if row and row.get("peak_rss_mb")]
    slow = f"svc 1 dispatcher, {round(results['plan'].get('slow_delay', 0.2) * 1000)} ms receivers"
    pages = (results.get("listing") or {}).get("requests") or []
    celery = max(filter(None, map(rate.get, ("celery-prefork", "celery-gevent"))), default=None)

    def paired(
        top: str, bottom: str, key: str = "rate_per_s", bottom_key: str | None = None
    ) -> float | None:
        """End to end against the naive consumer round by round: both saw the same machine."""
        return round_ratio(rows.get(top, {}), rows.get(bottom, {}), key, bottom_key)

    def over(top: str, bottom: str) -> float | None:
        return ratio(rate.get(top), rate.get(bottom))

    over_celery = ratio(rate.get("svc2"), celery)
    e2e_cpu = paired("svc1-e2e", "naive1", f"{CPU}dispatcher", f"{CPU}worker")
    e2e_scale = over("svc2-e2e", "svc1-e2e")
    iso_ratio = ratio(iso.get("lag_p99_ms") if iso else None, healthy)
    slow_rss = rows.get("svc1-slow", {}).get("peak_rss_mb") or None
    swept = (results.get("outbox") or {}).get("rate_per_s")
    slowest = max((p["p99_ms"] for p in pages), default=None)
    bad_plans = sum(not p["plan_ok"] for p in pages) if pages else None
    found = [
        ("svc 1 dispatcher ÷ naive 1 process", over("svc1", "naive1"), "≥ 0.85"),
        ("svc 2 dispatchers ÷ svc 1 dispatcher", over("svc2", "svc1"), "> 1"),
        ("svc 1 dispatcher end to end ÷ naive 1 process", paired("svc1-e2e", "naive1"), "≥ 0.9"),
        ("svc 1 dispatcher CPU per delivery end to end ÷ naive 1 process", e2e_cpu, "≤ 1.1"),
        ("svc 2 dispatchers end to end ÷ naive 2 processes", paired("svc2-e2e", "naive2"), "≥ 0.9"),
        ("svc 2 dispatchers end to end ÷ 1 dispatcher end to end", e2e_scale, "> 1"),
        (f"{slow} ÷ svc 1 dispatcher", over("svc1-slow", "svc1"), "≥ 0.85"),
        (f"{slow}: dispatcher peak RSS, MB", slow_rss, f"≤ {RSS_LIMIT_MB}"),
        ("outbox catch-up, events/s per scheduler", swept, "≥ 5,000"),
        # Celery prefork and Dramatiq run two worker processes: compare two dispatchers.
        ("svc 2 dispatchers ÷ best Celery (2 processes each)", over_celery, "≥ 4"),
        ("svc 2 dispatchers ÷ Dramatiq (2 processes each)", over("svc2", "dramatiq"), "≥ 2"),
        ("healthy p99 with 20 % hanging ÷ all healthy", iso_ratio, "≤ 1.5"),
        ("dispatcher peak RSS, MB", max(rss, default=None), f"≤ {RSS_LIMIT_MB}"),
        ("retry storm: events missing after recovery", storm["missing"] if storm else None, "0"),
        ("listing pages (first and deep): slowest p99, ms", slowest, "≤ 20"),
        ("listing pages: plans with a Seq Scan, a big Sort or no index", bad_plans, "0"),
    ]
    goals = [goal(name, value, written) for name, value, written in found]
    for section in sections():
        goals += section.targets(results.get(section.KEY))
    return [g.row() for g in goals]
