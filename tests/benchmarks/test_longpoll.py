"""The long-poll section's pure parts: picking changes, dealing ids, latencies, targets."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from benchmarks.longpoll import section
from benchmarks.longpoll.section import SMOKE, picked, rounds, summary


def test_picked_ids_come_from_the_whole_list() -> None:
    ids = [f"pay{i}" for i in range(10_000)]
    chosen = picked(ids, 1000)
    assert len(set(chosen)) == 1000
    assert chosen[0] == "pay0" and chosen[-1] == "pay9990"
    assert picked(ids[:5], 10) == ids[:5]


def test_every_id_is_opened_exactly_once_across_clients_and_rounds() -> None:
    ids = [f"pay{i}" for i in range(1001)]
    opened = [p for round_ in rounds(ids, 3, 250) for part in round_ for p in part]
    assert sorted(opened) == sorted(ids)
    assert all(sum(len(part) for part in round_) <= 252 for round_ in rounds(ids, 3, 250))
    assert rounds(["a", "b", "c"], 2, 1000) == [[["a", "c"], ["b"]]]


def test_latency_runs_from_commit_to_answer_and_skips_the_unanswered() -> None:
    committed = {"a": 10.0, "b": 10.5, "c": 11.0}
    answered = {"a": 10.05, "b": 10.6}
    found = summary(committed, answered)
    assert (found["p50_ms"], found["max_ms"]) == (50.0, 100.0)
    assert summary(committed, {})["p99_ms"] is None
    spread = summary(
        {str(i): 0.0 for i in range(100)}, {str(i): (i + 1) / 1000 for i in range(100)}
    )
    assert (spread["p50_ms"], spread["p99_ms"], spread["max_ms"]) == (50, 99, 100)


def _phase(p99: float, rss: float, refused: int = 0, answered: int = 1000) -> dict[str, Any]:
    return {
        "latency": {"p99_ms": p99},
        "rss_peak_mib": rss,
        "refused": refused,
        "changes": 1000,
        "answered": answered,
        "changes_committed_s": 1.05,
    }


def test_targets_are_unmeasured_without_a_result() -> None:
    goals = section.targets(None)
    assert [g.value for g in goals] == [None] * 6
    assert all("long polls" in g.name for g in goals)
    assert goals[0].name == "long polls: 10,000 waits, p99 ms after 1,000 changes in 1 s"


def test_targets_read_both_phases() -> None:
    result = {
        "sizes": asdict(section.Sizes()),
        "waits": _phase(150.0, 300.0),
        "streams": _phase(250.0, 200.0, refused=1, answered=999),
    }
    goals = {g.name: g for g in section.targets(result)}
    wait_p99 = goals["long polls: 10,000 waits, p99 ms after 1,000 changes in 1 s"]
    assert wait_p99.value == 150.0 and wait_p99.check(150.0)
    stream_p99 = goals["long polls: 5,000 streams, p99 ms after 1,000 changes in 1 s"]
    assert stream_p99.value == 250.0 and not stream_p99.check(250.0)
    assert goals["long polls: 5,000 streams, API RSS MB"].value == 200.0
    spread = next(g for g in goals.values() if "committed them within" in g.name)
    assert spread.value == 1.05 and spread.check(1.05) and not spread.check(3.1)
    refused = next(g for g in goals.values() if g.name.startswith("long polls: refused"))
    assert refused.value == 2 and not refused.check(2)


def test_a_smoke_run_keeps_the_recorded_names_and_its_own_goal() -> None:
    result = {"sizes": asdict(SMOKE), "waits": _phase(1.0, 1.0), "streams": _phase(1.0, 1.0)}
    goals = section.targets(result)
    assert [g.name for g in goals] == [g.name for g in section.targets(None)]
    assert goals[4].goal == "≤ 0.275"  # 1.1 times the smoke run's spread of 0.25 s
