"""The listing run's part of the results table."""

from __future__ import annotations

from typing import Any

from benchmarks.figures import fmt


def listing_table(row: dict[str, Any] | None) -> list[str]:
    """The listing section: each page's latency and the plan of the service's query."""
    if not row:
        return []
    lines = [
        "",
        f"**Listing pages**: one `svc api` process answering one client, one request at a "
        f"time; the scope holds {fmt(row['events'])} events (every type) with "
        f"{fmt(row['delivery_attempts'])} delivery attempts at 2 endpoints and "
        f"{fmt(row['payments'])} payments, over {fmt(row['days'])} days; pages of "
        f"{fmt(row['limit'])}; each request {fmt(row['samples'])} times after "
        f"{fmt(row['warm_up_rounds'])} warm-up rounds, all of them in turn. *Plan*: EXPLAIN "
        "(ANALYZE, BUFFERS) of the service's own query for the page, prepared and executed "
        "as a pool connection executes it; the index it read, the rows its scans read (kept or "
        "filtered out), its time in PostgreSQL, and what fails it (a Seq Scan of a large "
        "table, a Sort of more than ten pages of rows, no index). Load average (1/5/15 min) "
        f"{row['load_average']['before']} before the timed requests, "
        f"{row['load_average']['after']} after them.",
        "",
        "| request | rows before it | p50 ms | p99 ms | max ms | index read | plan | rows read "
        "| execution ms |",
        "|---|---:|---:|---:|---:|---|---|---:|---:|",
    ]
    for page in row["requests"]:
        verdict = page["plan_kind"]
        if page["problems"]:
            verdict += ", **" + ", ".join(page["problems"]) + "**"
        indexes = ", ".join(f"`{name}`" for name in page["indexes"]) or "–"
        lines.append(
            f"| `{page['route']}` | {fmt(page['rows_before'])} | {fmt(page['p50_ms'], 1)} | "
            f"{fmt(page['p99_ms'], 1)} | {fmt(page['max_ms'], 1)} | {indexes} | {verdict} | "
            f"{fmt(page.get('rows_read'))} | {fmt(page['execution_ms'], 2)} |"
        )
    return lines
