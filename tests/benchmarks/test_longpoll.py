"""The long-poll benchmark's pure parts: spreading changes, dealing ids, latencies, targets."""

from __future__ import annotations

import argparse
from typing import Any

from benchmarks.longpoll import section
from benchmarks.longpoll.__main__ import parser, sizes_of
from benchmarks.longpoll.plan import (
    SMOKE,
    Sizes,
    latencies_ms,
    picked,
    rounds,
    shares,
    spread,
    summary,
)


def test_changes_are_spread_evenly_over_the_window() -> None:
    offsets = spread(1000, 1.0)
    assert len(offsets) == 1000
    assert offsets[0] == 0.0
    assert offsets[-1] < 1.0
    assert offsets[500] == 0.5


def test_picked_ids_come_from_the_whole_list() -> None:
    ids = [f"pay{i}" for i in range(10_000)]
    chosen = picked(ids, 1000)
    assert len(set(chosen)) == 1000
    assert chosen[0] == "pay0" and chosen[-1] == "pay9990"
    assert picked(ids[:5], 10) == ids[:5]


def test_every_id_is_opened_exactly_once_across_clients_and_rounds() -> None:
    ids = [f"pay{i}" for i in range(1001)]
    parts = shares(ids, 3)
    opened = [p for round_ in rounds(parts, 250) for part in round_ for p in part]
    assert sorted(opened) == sorted(ids)
    assert all(sum(len(part) for part in round_) <= 252 for round_ in rounds(parts, 250))


def test_a_round_holds_everything_when_the_batch_is_larger() -> None:
    assert rounds([["a", "b"], ["c"]], 1000) == [[["a", "b"], ["c"]]]


def test_latency_runs_from_commit_to_answer_and_skips_the_unanswered() -> None:
    committed = {"a": 10.0, "b": 10.5, "c": 11.0}
    answered = {"a": 10.05, "b": 10.6}
    assert [round(v, 3) for v in latencies_ms(committed, answered)] == [50.0, 100.0]


def test_summary_of_nothing_is_unmeasured() -> None:
    assert summary([])["p99_ms"] is None
    found = summary([float(i) for i in range(1, 101)])
    assert (found["p50_ms"], found["p99_ms"], found["max_ms"], found["count"]) == (50, 99, 100, 100)


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


def test_targets_read_both_phases() -> None:
    result = {
        "sizes": {"waits": 10_000, "streams": 5_000, "changes": 1_000},
        "waits": _phase(150.0, 300.0),
        "streams": _phase(250.0, 200.0, refused=1, answered=999),
    }
    goals = {g.name: g for g in section.targets(result)}
    wait_p99 = goals["long polls: 10,000 waits, p99 ms after 1,000 changes in 1 s"]
    assert wait_p99.value == 150.0 and wait_p99.check(150.0)
    stream_p99 = goals["long polls: 5,000 streams, p99 ms after 1,000 changes in 1 s"]
    assert stream_p99.value == 250.0 and not stream_p99.check(250.0)
    spread = next(g for g in goals.values() if "committed them within" in g.name)
    assert spread.value == 1.05 and spread.check(1.05) and not spread.check(3.1)
    refused = next(g for g in goals.values() if g.name.startswith("long polls: refused"))
    assert refused.value == 2 and not refused.check(2)


def test_the_cli_and_the_section_share_their_sizes() -> None:
    assert sizes_of(parser().parse_args([])) == Sizes()
    assert sizes_of(parser().parse_args(["--smoke"])) == SMOKE
    chosen = sizes_of(parser().parse_args(["--waits", "300", "--clients", "3"]))
    assert (chosen.waits, chosen.clients, chosen.streams) == (300, 3, Sizes().streams)
    assert isinstance(parser().parse_args([]), argparse.Namespace)
