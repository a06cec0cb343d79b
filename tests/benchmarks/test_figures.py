"""Repeated benchmark runs are reported by their median run, never flattered."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from benchmarks import report
from benchmarks.figures import fold, median_run
from benchmarks.targets import targets as judged


def _tp(system: str, rate: float, rss: float = 50.0) -> dict[str, Any]:
    return {"system": system, "rate_per_s": rate, "peak_rss_mb": rss}


def _lag(system: str, p99: float) -> dict[str, Any]:
    return {"system": system, "lag_p99_ms": p99}


def test_the_median_run_is_reported_with_every_run_kept_in_order() -> None:
    row = median_run(
        [_tp("svc1", 2_000), _tp("svc1", 2_600), _tp("svc1", 1_800)], "rate_per_s", True
    )
    assert row["rate_per_s"] == 2_000
    assert row["rate_per_s_runs"] == [2_000, 2_600, 1_800]
    assert [run["rate_per_s"] for run in row["runs"]] == [2_000, 2_600, 1_800]


def test_of_two_runs_the_worse_is_reported() -> None:
    rates = median_run([_tp("svc1", 2_000), _tp("svc1", 2_600)], "rate_per_s", True)
    assert rates["rate_per_s"] == 2_000  # the lower rate
    lags = median_run([_lag("svc1", 10), _lag("svc1", 30)], "lag_p99_ms", False)
    assert lags["lag_p99_ms"] == 30  # the higher p99


def test_peak_memory_is_the_highest_of_all_runs() -> None:
    runs = [_tp("svc1", 2_000, rss=70), _tp("svc1", 2_600, rss=140), _tp("svc1", 1_800, rss=60)]
    row = median_run(runs, "rate_per_s", True)
    assert row["rate_per_s"] == 2_000 and row["peak_rss_mb"] == 140


def test_a_single_run_is_left_as_it_is() -> None:
    assert median_run([_tp("svc1", 2_000)], "rate_per_s", True) == _tp("svc1", 2_000)


def test_rounds_fold_into_one_row_per_system_after_those_run_once() -> None:
    rounds = [
        {
            "throughput": [_tp("naive1", 2_500), _tp("svc1", 2_100)],
            "latency": [_lag("svc1", 12)],
            "isolation": _lag("svc1", 30),
            "outbox": {"system": "outbox", "rate_per_s": 6_000},
        },
        {
            "throughput": [_tp("naive1", 2_900), _tp("svc1", 2_300)],
            "latency": [_lag("svc1", 9)],
            "isolation": _lag("svc1", 11),
            "outbox": {"system": "outbox", "rate_per_s": 5_000},
        },
        {
            "throughput": [_tp("naive1", 2_700), _tp("svc1", 1_900)],
            "latency": [_lag("svc1", 15)],
            "isolation": _lag("svc1", 14),
            "outbox": {"system": "outbox", "rate_per_s": 5_500},
        },
    ]
    results: dict[str, Any] = {"plan": {"repeats": 3}, "throughput": [], "latency": []}
    fold(rounds, results)
    assert [(r["system"], r["rate_per_s"]) for r in results["throughput"]] == [
        ("naive1", 2_700),
        ("svc1", 2_100),
    ]
    assert results["latency"][0]["lag_p99_ms"] == 12
    assert results["isolation"]["lag_p99_ms"] == 14
    assert results["isolation"]["lag_p99_ms_runs"] == [30, 11, 14]
    assert results["outbox"]["rate_per_s"] == 5_500
    targets = {t["target"]: t["value"] for t in judged(results)}
    assert targets["svc 1 dispatcher ÷ naive 1 process"] == round(2_100 / 2_700, 2)
    assert targets["healthy p99 with 20 % hanging ÷ all healthy"] == round(14 / 12, 2)


def test_the_report_says_rows_are_medians_only_of_repeated_runs() -> None:
    recorded = Path(__file__).parents[2] / "benchmarks/results"
    newest = max(p for p in recorded.glob("*.json") if re.fullmatch(r"[\d-]+", p.stem))
    results = json.loads(newest.read_text())  # the full run recorded last
    medians = "Systems run in rounds show their median run."
    assert medians in report.markdown(results, f"results/{newest.stem}")
    once = results | {"plan": results["plan"] | {"repeats": 1}}
    assert medians not in report.markdown(once, f"results/{newest.stem}")
