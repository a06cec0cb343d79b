"""Repeated runs folded into one row each: the median run, with every run's figure kept.

On a shared 2-core machine one system drains the same backlog a fifth faster or slower from
one run to the next, which is more than the margins the targets are about. The suite therefore runs
the compared systems in rounds, each round every one of them in turn, and reports each
system's median run. With an even number of runs the worse of the middle two is taken, so a
repeat never flatters a figure; peak memory is the highest of all runs.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

Row = dict[str, Any]


def median_run(runs: Sequence[Row], key: str, higher_is_better: bool) -> Row:
    """The run whose ``key`` is the median of ``runs`` (the worse middle one when there are
    two), with every run's value under ``<key>_runs``, every run whole under ``runs`` (both
    in run order) and the highest ``peak_rss_mb`` of them."""
    if len(runs) == 1:
        return dict(runs[0])
    ranked = sorted(runs, key=lambda run: run[key], reverse=not higher_is_better)
    chosen = {
        **ranked[(len(ranked) - 1) // 2],
        f"{key}_runs": [run[key] for run in runs],
        "runs": [dict(run) for run in runs],
    }
    peaks = [run["peak_rss_mb"] for run in runs if run.get("peak_rss_mb")]
    if peaks:
        chosen["peak_rss_mb"] = max(peaks)
    return chosen


def ratios(numerators: Sequence[float], denominators: Sequence[float]) -> list[float]:
    """Round by round, one row's figure over another's of the same round (both lists in round
    order), to three places; a round where either figure is zero or NaN (too few receipts to
    time) is left out. Two runs of one round saw the same machine, so a machine that slows down
    run after run does not count as the difference between the rows."""
    found = []
    for numerator, denominator in zip(numerators, denominators, strict=True):
        if not denominator or denominator != denominator or numerator != numerator:
            continue
        found.append(round(numerator / denominator, 3))
    return found


def median_ratio(numerators: Sequence[float], denominators: Sequence[float]) -> float | None:
    """The median of ``ratios`` to three places, or None when no round has both figures."""
    return median_of(ratios(numerators, denominators))


def round_ratio(
    numerator: Row, denominator: Row, key: str, denominator_key: str | None = None
) -> float | None:
    """``numerator``'s ``key`` over ``denominator``'s ``denominator_key`` (``key`` if not
    given): the ``median_ratio`` of the rounds when both rows carry their runs (``runs``, in
    round order, as ``median_run`` keeps them), else of the rows' own figures (one run each)."""
    below = denominator_key or key
    tops, bottoms = numerator.get("runs"), denominator.get("runs")
    if not (tops and bottoms and len(tops) == len(bottoms)):
        tops, bottoms = [numerator], [denominator]
    return median_ratio(
        [_figure(run, key) for run in tops], [_figure(run, below) for run in bottoms]
    )


def _figure(run: Row, key: str) -> float:
    """A run's ``key``, NaN when it has none (a run too short to be charged any CPU)."""
    value = run.get(key)
    return math.nan if value is None else float(value)


def median_of(found: Sequence[float]) -> float | None:
    """The median of some rounds' ratios to three places, or None when there are none."""
    return round(statistics.median(found), 3) if found else None


def fold(rounds: Sequence[dict[str, Any]], into: dict[str, Any]) -> None:
    """Fold the results of ``rounds`` (each with ``throughput`` and ``latency`` rows and
    maybe ``isolation`` and ``outbox``) into ``into``, one row per system."""
    sections = (("throughput", "rate_per_s", True), ("latency", "lag_p99_ms", False))
    for section, key, higher in sections:
        systems: dict[str, list[Row]] = {}
        for results in rounds:
            for row in results[section]:
                systems.setdefault(row["system"], []).append(row)
        into[section] = [
            *into.get(section, []),
            *(median_run(runs, key, higher) for runs in systems.values()),
        ]
    singles = (("isolation", "lag_p99_ms", False), ("outbox", "rate_per_s", True))
    for name, key, higher in singles:
        runs = [results[name] for results in rounds if results.get(name)]
        if runs:
            into[name] = median_run(runs, key, higher)
