"""Section of ``make bench``: 10,000 long polls and 5,000 payment streams on one API process,
1,000 of their payments changed within one second (see ``benchmarks.longpoll.hold``)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from benchmarks.longpoll.hold import measure
from benchmarks.longpoll.plan import SMOKE, Sizes
from benchmarks.sections import Goal, Run
from harness.database import bench_database

KEY = "longpolls"
P99_MS = 200
RSS_MIB = 400


async def run(run: Run) -> dict[str, Any]:
    """On a database of its own: the payments' ``payment.created`` events stay in its outbox."""
    sizes = SMOKE if run.smoke else Sizes()
    async with bench_database(run.admin_url) as database_url:
        stores = replace(run.stores, database_url=database_url)
        return await measure(run.procs, stores, sizes, run.profile_dir)


def _value(result: dict[str, Any] | None, kind: str, *path: str) -> float | None:
    found: Any = (result or {}).get(kind)
    for step in path:
        found = found.get(step) if isinstance(found, dict) else None
    return None if found is None else float(found)


def _refused(result: dict[str, Any] | None) -> float | None:
    """Refused requests and failed stream opens, plus changed payments never answered."""
    if not result or any("error" in result[kind] for kind in ("waits", "streams")):
        return None
    return float(
        sum(
            result[kind]["refused"] + result[kind]["changes"] - result[kind]["answered"]
            for kind in ("waits", "streams")
        )
    )


def _slowest_commits(result: dict[str, Any] | None) -> float | None:
    """Seconds from the first commit to the last of the slower phase."""
    found = [_value(result, kind, "changes_committed_s") for kind in ("waits", "streams")]
    return None if None in found else max(v for v in found if v is not None)


def targets(result: dict[str, Any] | None) -> list[Goal]:
    sizes = (result or {}).get("sizes", {})
    waits = f"{sizes.get('waits', 10_000):,}"
    streams = f"{sizes.get('streams', 5_000):,}"
    changes = f"{sizes.get('changes', 1_000):,}"
    spread = f"{sizes.get('spread_s', 1.0):g}"
    return [
        Goal(
            f"long polls: {waits} waits, p99 ms after {changes} changes in {spread} s",
            _value(result, "waits", "latency", "p99_ms"),
            f"≤ {P99_MS}",
            lambda v: v <= P99_MS,
        ),
        Goal(
            f"long polls: API RSS with {waits} waits, MB",
            _value(result, "waits", "rss_peak_mib"),
            f"≤ {RSS_MIB}",
            lambda v: v <= RSS_MIB,
        ),
        Goal(
            f"long polls: {streams} streams, p99 ms after {changes} changes in {spread} s",
            _value(result, "streams", "latency", "p99_ms"),
            f"≤ {P99_MS}",
            lambda v: v <= P99_MS,
        ),
        Goal(
            f"long polls: {streams} streams, API RSS MB",
            _value(result, "streams", "rss_peak_mib"),
            f"≤ {RSS_MIB}",
            lambda v: v <= RSS_MIB,
        ),
        Goal(
            f"long polls: {changes} changes meant within {spread} s, slowest phase "
            "committed them within, s (the harness is one process)",
            _slowest_commits(result),
            f"≤ {float(spread) * 1.1:g}",
            lambda v: v <= float(spread) * 1.1,
        ),
        Goal(
            "long polls: refused (non-2xx, transport errors, failed stream opens, unanswered)",
            _refused(result),
            "0",
            lambda v: v == 0,
        ),
    ]


def _ms(value: Any) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value}"


def rows(result: dict[str, Any]) -> list[str]:
    """The results table: one column per kind (waits, streams)."""
    waits, streams = result["waits"], result["streams"]
    failed = [f"{r['kind']} failed: {r['error']}" for r in (waits, streams) if "error" in r]
    if failed:
        return ["; ".join(failed)]
    lines = [
        f"| measure | {waits['held']:,} long polls | {streams['held']:,} streams |",
        "|---|---|---|",
    ]

    def row(name: str, value: Any) -> None:
        lines.append(f"| {name} | {value(waits)} | {value(streams)} |")

    row("client processes", lambda r: r["clients"])
    row("all opened in, s", lambda r: f"{r['open_s']} ({r['opened_per_s']:,}/s)")
    row(
        "API RSS before / all open / peak, MiB",
        lambda r: f"{r['rss_before_mib']} / {r['rss_open_mib']} / {r['rss_peak_mib']}",
    )
    row("memory per open connection, KiB", lambda r: r["kib_per_connection"])
    row(
        "changes / committed within, s",
        lambda r: f"{r['changes']:,} / {r['changes_committed_s']}",
    )
    row(
        "commit to answer, p50 / p90 / p99 / max, ms",
        lambda r: " / ".join(
            _ms(r["latency"][k]) for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms")
        ),
    )
    for name, key in (
        (
            "of which commit to signal sent (the Redis publish), p50 / p99, ms",
            "commit_to_signal",
        ),
        ("of which signal sent to answer (the API's wake-up), p50 / p99, ms", "signal_to_answer"),
    ):
        row(name, lambda r, key=key: f"{_ms(r[key]['p50_ms'])} / {_ms(r[key]['p99_ms'])}")
    row(
        "answered / refused / wait ran out",
        lambda r: f"{r['answered']:,} / {r['refused']} / {r['expired']}",
    )
    row(
        "CPU s in the window: API / clients / changer / PostgreSQL",
        lambda r: (
            " / ".join(f"{r['cpu_s'][g]:.2f}" for g in ("api", "clients", "harness", "postgres"))
            + f" (window {r['window_s']} s)"
        ),
    )
    return lines


def markdown(result: dict[str, Any] | None) -> list[str]:
    if not result:
        return []
    return [
        "### Long polls and payment streams",
        "",
        "One `svc api` process holding long polls (`GET /v1/payments/{id}?wait=30`), then, on a "
        "fresh process, payment streams (WebSocket); payments canceled as the API sees a "
        "change (the row locked and updated through the payment store, the service's wake-up "
        "signal after the commit), spread over one second; latency from each change's commit "
        "to its client receiving the final payment. See `benchmarks/longpoll/README.md`.",
        "",
        *rows(result),
        "",
    ]
