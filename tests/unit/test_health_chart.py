"""The delivery health picture's geometry and words."""

from __future__ import annotations

from api.dashboard.health_chart import PLOT_HEIGHT, TOP, chart, summary
from svc.events.model import HOUR_MS, Hour

START = 1_764_028_800_000  # 2025-11-25 00:00 UTC


def _hours(*counts: tuple[int, int]) -> list[Hour]:
    return [Hour(START + n * HOUR_MS, ok, failed) for n, (ok, failed) in enumerate(counts)]


def test_bars_stack_failures_on_successes_scaled_to_the_busiest_hour() -> None:
    drawn = chart(_hours((30, 10), (0, 0), (5, 0), (0, 20)))
    baseline = TOP + PLOT_HEIGHT
    assert drawn.scale == 40 and drawn.baseline == baseline
    busiest, empty, small, failing = drawn.bars
    assert busiest.succeeded_height == 75 and busiest.failed_height == 25
    assert busiest.succeeded_y == baseline - 75 and busiest.failed_y == TOP
    assert empty.succeeded_height == empty.failed_height == 0
    assert small.succeeded_height == 12.5
    assert failing.succeeded_height == 0 and failing.failed_height == 50
    assert failing.failed_y == baseline - 50
    assert busiest.title == "00:00–01:00 UTC: 30 succeeded, 10 failed"
    assert [t.label for t in drawn.ticks] == ["00:00", "02:00", "03:00"]
    assert len({b.x for b in drawn.bars}) == 4


def test_no_attempts_draws_no_bars_and_says_so() -> None:
    drawn = chart(_hours(*[(0, 0)] * 24))
    assert drawn.scale == 0 and all(
        not b.succeeded_height and not b.failed_height for b in drawn.bars
    )
    assert drawn.summary == "No delivery attempts in the last 24 hours."


def test_the_rate_in_words_never_rounds_a_failure_away() -> None:
    assert summary(_hours((9999, 1))) == (
        "Last hour: 99.9 % of 10,000 attempts succeeded (9,999 succeeded, 1 failed)."
    )
    assert summary(_hours((1, 2))).startswith("Last hour: 33.3 % of 3 attempts")
    assert summary(_hours((4, 0))).startswith("Last hour: 100.0 % of 4 attempts")
