"""Reading, folding and printing figures: repeated runs fold into their median run, and ratios
divide runs of the same round, which saw the same machine."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

Row = dict[str, Any]


def by_system(rows: list[Row]) -> dict[str, Row]:
    return {row["system"]: row for row in rows}


def missing(value: Any) -> bool:
    """A figure that was not measured: None, or NaN (a percentile of no samples)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def ratio(a: float | None, b: float | None) -> float | None:
    if missing(a) or missing(b) or not b:
        return None
    assert a is not None
    return round(a / b, 2)


def fmt(value: Any, digits: int = 0) -> str:
    if missing(value):
        return "–"
    return f"{value:,.{digits}f}" if isinstance(value, float | int) else str(value)


def median_run(runs: Sequence[Row], key: str, higher_is_better: bool) -> Row:
    """The median run by ``key`` (of two middle ones the worse), every run kept under ``runs``
    and its ``key`` under ``<key>_runs``; ``peak_rss_mb`` is the highest of them."""
    if len(runs) == 1:
        return dict(runs[0])
    ranked = sorted(runs, key=lambda run: run[key], reverse=not higher_is_better)
    chosen = {
        **ranked[(len(ranked) - 1) // 2],
        f"{key}_runs": [run[key] for run in runs],
        "runs": [dict(run) for run in runs],
    }
    if peaks := [run["peak_rss_mb"] for run in runs if run.get("peak_rss_mb")]:
        chosen["peak_rss_mb"] = max(peaks)
    return chosen


def ratios(numerators: Sequence[float | None], denominators: Sequence[float | None]) -> list[float]:
    """Round by round, one figure over the other, leaving out rounds missing either."""
    return [
        round(top / bottom, 3)
        for top, bottom in zip(numerators, denominators, strict=True)
        if top is not None and bottom and not missing(bottom) and not missing(top)
    ]


def median_of(found: Sequence[float]) -> float | None:
    """The median of some rounds' ratios, or None when there are none."""
    return round(statistics.median(found), 3) if found else None


def round_ratio(top: Row, bottom: Row, key: str, bottom_key: str | None = None) -> float | None:
    """The median over rounds of ``top[key]`` ÷ ``bottom[bottom_key or key]``."""
    tops, bottoms = top.get("runs"), bottom.get("runs")
    if not (tops and bottoms and len(tops) == len(bottoms)):
        tops, bottoms = [top], [bottom]
    bottom_key = bottom_key or key
    return median_of(ratios([r.get(key) for r in tops], [r.get(bottom_key) for r in bottoms]))


def fold(rounds: Sequence[dict[str, Any]], into: dict[str, Any]) -> None:
    """Fold ``rounds`` into ``into``, one row per system."""
    for section, key, higher in (
        ("throughput", "rate_per_s", True),
        ("latency", "lag_p99_ms", False),
    ):
        systems: defaultdict[str, list[Row]] = defaultdict(list)
        for results in rounds:
            for row in results[section]:
                systems[row["system"]].append(row)
        into[section] += [median_run(runs, key, higher) for runs in systems.values()]
    for name, key, higher in (("isolation", "lag_p99_ms", False), ("outbox", "rate_per_s", True)):
        if runs := [results[name] for results in rounds if results.get(name)]:
            into[name] = median_run(runs, key, higher)
