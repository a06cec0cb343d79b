"""The retry ladder: grammar, default schedule over 72 h, window, rejection of bad ladders."""

from __future__ import annotations

import pytest

from svc.amqp.topology import Topology
from svc.ladder import DEFAULT_LADDER, LadderError, RetryLadder

M = 60_000
H = 60 * M


def test_default_ladder_attempt_times_over_72_hours() -> None:
    times = RetryLadder.parse(DEFAULT_LADDER).schedule()
    expected = [0, 1 * M, 6 * M, 36 * M]
    expected += [36 * M + k * H for k in range(1, 24)]  # hourly while within 24 h: 1h36 … 23h36
    last_hourly = expected[-1]
    expected += [last_hourly + k * 6 * H for k in range(1, 9)]  # 6-hourly while within 72 h
    assert times == expected
    assert expected[-1] == 71 * H + 36 * M
    assert len(times) == 35


def test_window_is_last_range_end() -> None:
    assert RetryLadder.parse(DEFAULT_LADDER).window_ms == 72 * H
    assert RetryLadder.parse("1s,2s,4s").window_ms == 7000


def test_short_test_ladder() -> None:
    ladder = RetryLadder.parse("1s,2s..6s")
    assert ladder.schedule() == [0, 1000, 3000, 5000]
    assert ladder.delays_ms == (1000, 2000)


def test_next_retry_uses_real_failure_times() -> None:
    ladder = RetryLadder.parse("1s,2s..6s")
    first = 1_000_000
    retry = ladder.next_retry(0, first, first + 150)  # first attempt took 150 ms
    assert retry is not None and (retry.delay_ms, retry.step) == (1000, 1)
    retry = ladder.next_retry(1, first, first + 3100)
    assert retry is not None and (retry.delay_ms, retry.step) == (2000, 1)
    assert ladder.next_retry(1, first, first + 4100) is None  # next would be 6.1 s > 6 s


def test_next_attempt_exactly_at_window_is_allowed() -> None:
    ladder = RetryLadder.parse("2s..6s")
    retry = ladder.next_retry(0, 0, 4000)
    assert retry is not None
    assert ladder.next_retry(0, 0, 4001) is None


def test_step_past_end_is_exhausted() -> None:
    assert RetryLadder.parse("1s").next_retry(5, 0, 0) is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "1m,,5m",
        "5",
        "1x",
        "0s",
        "-1s",
        "1m..30s",
        "1h..24h,5m",
        "1h..24h,6h..12h",
        "1m..",
        "..1h",
        "1.5m",
    ],
)
def test_bad_ladders_are_rejected(text: str) -> None:
    with pytest.raises(LadderError):
        RetryLadder.parse(text)


def test_units() -> None:
    ladder = RetryLadder.parse("500ms,2s,1m,1h,1d..3d")
    assert [s.delay_ms for s in ladder.steps] == [500, 2000, M, H, 24 * H]
    assert ladder.window_ms == 72 * H


def test_a_job_waits_in_the_longest_delay_queue_not_past_its_time() -> None:
    topology = Topology.build("ns", RetryLadder.parse("1m,5m"), defer_ms=5000, handoff_ms=15000)
    assert topology.wait_queue(4_000) == "ns.delay.5000ms"  # shorter than any: the shortest
    assert topology.wait_queue(9_999) == "ns.delay.5000ms"
    assert topology.wait_queue(14_999) == "ns.delay.10000ms"  # a deferral's queue serves too
    assert topology.wait_queue(120_000) == "ns.delay.60000ms"
    assert topology.wait_queue(10**9) == "ns.delay.300000ms"


def test_each_deferral_of_a_job_waits_twice_as_long_up_to_eight_times_the_first() -> None:
    topology = Topology.build("ns", RetryLadder.parse("1m,5m"), defer_ms=5000, handoff_ms=15000)
    queues = [topology.defer_queue(n) for n in range(1, 7)]
    assert queues == [
        "ns.delay.5000ms",
        "ns.delay.10000ms",
        "ns.delay.20000ms",
        "ns.delay.40000ms",
        "ns.delay.40000ms",
        "ns.delay.40000ms",
    ]
    assert {*queues} <= {*topology.work_queues()}  # declared with the others
