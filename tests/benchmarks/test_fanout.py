"""The wide fan-out section's bookkeeping: deliveries per (event, URL), ports, ratio, report."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from typing import Any

from benchmarks import fanout
from benchmarks.fanout import Delivered, count_deliveries, port_of
from benchmarks.figures import median_of, ratios
from benchmarks.receipts import Receipt


def _receipt(event_id: str, path: str, status: int = 204, at_ms: float = 0.0) -> Receipt:
    return Receipt(at_ms, status, path, event_id, signed=True)


def test_each_event_and_url_is_one_delivery() -> None:
    found: Delivered = {}
    receipts = [
        _receipt("ev1", "/w/o0e0", at_ms=1),
        _receipt("ev1", "/w/o0e1", at_ms=2),
        _receipt("ev2", "/w/o0e0", at_ms=3),
        _receipt("ev1", "/w/o0e0", at_ms=4),  # the same delivery again
        _receipt("ev3", "/w/o0e0"),  # an event of another round
        _receipt("ev2", "/w/o0e1", status=503),  # not delivered
    ]
    count_deliveries(receipts, {"ev1", "ev2"}, found)
    assert set(found) == {("ev1", "/w/o0e0"), ("ev1", "/w/o0e1"), ("ev2", "/w/o0e0")}
    assert found["ev1", "/w/o0e0"].at_ms == 1  # the first one counts


def test_endpoints_take_the_ports_in_even_shares() -> None:
    shares = Counter(port_of(0, e, 100, 10) for e in range(100))
    assert shares == dict.fromkeys(range(10), 10)
    cold = Counter(port_of(o, e, 10, 10) for o in range(1000) for e in range(10))
    assert set(cold.values()) == {1000}


def test_the_ratio_pairs_each_round_wide_with_its_own_narrow() -> None:
    """Each round's wide rate is divided by that round's narrow rate, and the median of
    those taken: both runs of a round see the same machine."""
    assert median_of(ratios([900, 1000, 5000], [1000, 1100, 1200])) == round(1000 / 1100, 3)
    # One slow round of both rows (a busy machine) moves neither the pairs nor their median,
    # where the ratio of the medians (6,750 / 10,000) would say 0.68.
    assert median_of(ratios([9500, 9500, 4000, 4000], [10000, 10000, 10000, 4200])) == 0.95
    assert median_of(ratios([9500], [0])) is None  # nothing to pair
    assert fanout.FULL.rounds % 3 == 0  # each of the three rows goes first as often


def _result() -> dict[str, Any]:
    def row(endpoints: int, events: int, rate: float, filtered: bool = False) -> dict[str, Any]:
        return {
            "filtered": filtered,
            "endpoints": endpoints,
            "events": events,
            "delivered": endpoints * events,
            "rate_per_s": rate,
        }

    return {
        "rows": [row(10, 5000, 4000.0), row(100, 500, 3800.0), row(100, 500, 3500.0, True)],
        "round_ratios": [0.95],
        "ratio": 0.95,
        "filtered_round_ratios": [0.92],
        "filtered_ratio": 0.92,
        "cold": {"endpoints": 10000, "delivered": 10000, "first_s": 0.4},
        "sizes": asdict(fanout.FULL),
    }


def test_targets_name_the_point_and_check_the_goals() -> None:
    goals = fanout.targets(_result())
    assert all("100 endpoints" in goal.name for goal in goals)
    assert [goal.value for goal in goals] == [0.95, 0.92, 0.4]
    assert all(goal.check(goal.value) for goal in goals if goal.value is not None)
    assert not goals[0].check(0.85) and not goals[1].check(0.85) and not goals[2].check(2.5)


def test_targets_not_measured() -> None:
    goals = fanout.targets(None)
    assert [goal.value for goal in goals] == [None, None, None]
    assert "100 endpoints ÷ 10 endpoints" in goals[0].name
    assert "payload filter" in goals[1].name
    assert "10,000 endpoints" in goals[2].name


def test_markdown_has_the_three_rows_and_the_cold_start() -> None:
    text = "\n".join(fanout.markdown(_result()))
    assert "| 10 | no | 5,000 | 50,000 | 4,000 | 1.00 |" in text
    assert "| 100 | no | 500 | 50,000 | 3,800 | 0.95 |" in text
    assert "| 100 | yes | 500 | 50,000 | 3,500 | 0.92 |" in text
    assert "over 10,000 endpoints" in text and "10,000 deliveries, the first 0.400 s" in text
    assert fanout.markdown(None) == []
