"""Duplicates judged as a share of a scenario's deliveries: the share, the 0.25 % limit, its
words in the verdict, its column in the table and its key in the results file, which files
recorded before it still load without."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from chaos.faults import catalogue
from chaos.report import results_name, row
from chaos.suite import FULL, Run
from chaos.verdict import DUPLICATE_LIMIT, Observed, Records, Shop, Verdict, judge
from harness.load import Request
from harness.receivers import Receipt
from harness.results import write_json

RESULTS = Path(__file__).parents[2] / "chaos" / "results"
FOUR_ENDPOINTS = {"r1": 2500, "r2": 2500, "r3": 2500, "flaky": 2500}


def verdict(duplicates: int, delivered: dict[str, int]) -> Verdict:
    return Verdict(
        scenario="postgres-restart", fault="PostgreSQL stopped", fault_seconds=16.0,
        requests=2500, accepted=2500, failed_requests={}, retried_answers={},
        delivered=delivered, lost=0, acknowledged_not_stored=0, unconfirmed_payments=0,
        duplicates=duplicates, doubled_events=0, double_payments=0, bad_signatures=0,
        recover_s=0.1, drain_s=3.9, recovered=True,
    )  # fmt: skip


def test_the_share_is_the_duplicates_over_the_first_deliveries_of_every_endpoint() -> None:
    assert verdict(41, FOUR_ENDPOINTS).duplicate_share == pytest.approx(0.0041)
    assert verdict(0, FOUR_ENDPOINTS).duplicate_share == 0.0


def test_a_scenario_at_exactly_the_limit_passes() -> None:
    at_limit = verdict(25, FOUR_ENDPOINTS)
    assert DUPLICATE_LIMIT == 0.0025
    assert at_limit.duplicate_share == DUPLICATE_LIMIT
    assert at_limit.passed
    assert at_limit.failures() == []


def test_a_scenario_above_the_limit_fails_and_says_by_how_much() -> None:
    just_above = verdict(26, FOUR_ENDPOINTS)
    assert not just_above.passed
    assert just_above.failures() == ["duplicates 0.26 % of deliveries, above 0.25 %"]
    assert verdict(41, FOUR_ENDPOINTS).failures() == [
        "duplicates 0.41 % of deliveries, above 0.25 %"
    ]


def test_a_scenario_with_no_deliveries_has_no_share() -> None:
    for delivered in ({}, {"r1": 0, "r2": 0}):
        nothing = verdict(3, delivered)
        assert nothing.duplicate_share == 0.0
        assert nothing.passed


def test_a_recount_of_the_duplicates_carries_the_share_along() -> None:
    recounted = dataclasses.replace(verdict(10, FOUR_ENDPOINTS), duplicates=50)
    assert recounted.duplicate_share == pytest.approx(0.005)
    assert not recounted.passed


def test_judge_counts_duplicates_at_every_endpoint_against_their_first_deliveries() -> None:
    fault = next(f for f in catalogue() if f.name == "baseline")
    seen = Observed(fault, Shop("dup", "org_1", "key"), started=0.0)
    seen.fault_start, seen.fault_end, seen.deadline = 10.0, 10.0, 60.0
    seen.requests = [Request(f"k{i}", 1.0 + i / 100, payment_id=f"pay_{i}") for i in range(200)]
    receipts = [Receipt(f"evt_{i}", f"pay_{i}", 20.0) for i in range(200)]
    receivers = [
        cast(
            Any,
            SimpleNamespace(
                name=name,
                endpoints={"/dup": SimpleNamespace(receipts=got, bad_signatures=0)},
            ),
        )
        for name, got in (("r1", receipts + receipts[:2]), ("r2", receipts))
    ]
    stored = Records(
        payments={f"pay_{i}" for i in range(200)}, bound={f"k{i}": f"pay_{i}" for i in range(200)}
    )
    found = judge(seen, stored, receivers, ["r1", "r2"])
    assert found.delivered == {"r1": 200, "r2": 200}
    assert found.duplicates == 2
    assert found.duplicate_share == pytest.approx(2 / 400)
    assert found.failures() == ["duplicates 0.50 % of deliveries, above 0.25 %"]


def test_the_table_shows_the_count_and_the_share() -> None:
    assert "| 41 (0.41 %) |" in row(verdict(41, FOUR_ENDPOINTS))
    assert "| 1,234 (0.12 %) |" in row(verdict(1234, {"r1": 1_000_000}))
    assert "| 0 (0.00 %) |" in row(verdict(0, {}))


def test_the_results_file_records_the_share(tmp_path: Path) -> None:
    summary = Run(FULL, [], verdicts=[verdict(41, FOUR_ENDPOINTS)]).summary()
    path = write_json(tmp_path / results_name(summary), summary)
    [scenario] = json.loads(path.read_text())["scenarios"]
    assert scenario["duplicates"] == 41
    assert scenario["duplicate_share"] == pytest.approx(0.0041)
    assert Verdict(**scenario).duplicate_share == pytest.approx(0.0041)


def test_a_results_file_without_the_share_still_loads() -> None:
    old = dataclasses.asdict(verdict(41, FOUR_ENDPOINTS))
    del old["duplicate_share"]
    loaded = Verdict(**old)
    assert loaded.duplicate_share == pytest.approx(0.0041)
    assert "| 41 (0.41 %) |" in row(loaded)


@pytest.mark.parametrize("path", sorted(RESULTS.glob("*.json")), ids=lambda p: p.name)
def test_every_recorded_results_file_loads_and_renders(path: Path) -> None:
    kept = {f.name for f in dataclasses.fields(Verdict)}  # older files hold more
    for scenario in json.loads(path.read_text())["scenarios"]:
        loaded = Verdict(**{k: v for k, v in scenario.items() if k in kept})
        deliveries = sum(loaded.delivered.values())
        share = loaded.duplicates / deliveries if deliveries else 0.0
        assert loaded.duplicate_share == pytest.approx(share)
        assert f"| {loaded.duplicates:,} (" in row(loaded)


def test_a_smoke_run_reports_the_share_without_judging_it() -> None:
    found = dataclasses.replace(verdict(3, {"a": 200, "b": 200, "c": 200, "d": 200}))
    assert not found.passed  # 0.38 % of 800 deliveries
    found.duplicate_limit = None  # as a smoke run sets it
    assert found.passed and found.failures() == []
    assert found.duplicate_share == pytest.approx(3 / 800)
