"""The soak's judgement: what counts as growth, and what its report shows."""

from __future__ import annotations

import math

import pytest

from chaos.soak import Sample, Soak, growths, section, series
from chaos.verdict import Verdict

RATE = 50.0


def _samples(shape: dict[str, list[float]], every: float = 60.0) -> list[Sample]:
    names = [s.name for s in series(RATE)]
    count = max((len(v) for v in shape.values()), default=20)
    return [
        Sample(n * every, {name: shape.get(name, [100.0] * count)[n] for name in names})
        for n in range(count)
    ]


def _by_series(samples: list[Sample], warm_s: float = 300.0) -> dict[str, bool]:
    return {g.series: g.passed for g in growths(samples, warm_s, RATE)}


def test_a_steady_run_holds_and_the_warm_up_is_not_judged() -> None:
    rising_then_flat = [50.0, 70.0, 90.0, 100.0, 100.0, 101.0] + [102.0] * 10
    held = _by_series(_samples({"api RSS": rising_then_flat}))
    assert all(held.values())


def test_a_leak_fails_its_series_alone() -> None:
    leaking = [100.0 + 2 * n for n in range(30)]
    held = _by_series(_samples({"dispatcher RSS": leaking}))
    assert held.pop("dispatcher RSS") is False
    assert all(held.values())


def test_one_burst_is_not_a_leak_but_a_lasting_rise_is() -> None:
    burst = [104.0] * 20
    burst[12] = 360.0  # the load's clients all connected at once, at one sample
    assert _by_series(_samples({"api open files": burst}))["api open files"] is True
    burst[-1] = burst[-2] = 360.0
    assert _by_series(_samples({"api open files": burst}))["api open files"] is False


def test_counts_near_zero_have_an_absolute_allowance() -> None:
    queued = [0.0] * 10 + [200.0, 180.0, 240.0]  # within five seconds of load
    assert _by_series(_samples({"queued messages": queued}))["queued messages"] is True
    queued[-3:] = [400.0, 420.0, 410.0]
    assert _by_series(_samples({"queued messages": queued}))["queued messages"] is False


def test_a_series_never_sampled_fails_and_too_few_samples_are_refused() -> None:
    samples = _samples({})
    for s in samples:
        del s.values["scheduler RSS"]
    found = {g.series: g for g in growths(samples, 300.0, RATE)}
    assert math.isnan(found["scheduler RSS"].start) and not found["scheduler RSS"].passed
    with pytest.raises(ValueError, match="1 samples after the warm-up"):
        growths(_samples({}, every=600.0)[:2], 300.0, RATE)


def test_the_report_has_the_table_and_the_growths() -> None:
    soak = Soak(minutes=20, every_s=60, warm_s=300, rate=RATE)
    soak.samples.extend(_samples({"api RSS": [100.0 + 2 * n for n in range(20)]}))
    counts = dict.fromkeys(
        (
            "lost",
            "acknowledged_not_stored",
            "unconfirmed_payments",
            "duplicates",
            "doubled_events",
            "double_payments",
            "bad_signatures",
        ),
        0,
    )
    verdict = Verdict(
        scenario="soak",
        fault="nothing broken",
        fault_seconds=0.0,
        requests=1000,
        accepted=1000,
        failed_requests={},
        retried_answers={},
        delivered={"a": 1000},
        recover_s=0.1,
        drain_s=0.0,
        recovered=True,
        **counts,
    )
    run = {"date": "2026-11-25", "machine": {"cores": 2}}
    text = section(run, soak, verdict, growths(soak.samples, soak.warm_s, RATE))
    assert "| api RSS | 112.0 MB | 136.0 MB | 24.0 MB | 11.2 MB | **no** |" in text
    assert "| soak (nothing broken) | 0 | 1,000 | 1,000 ×1 | 0 | 0 (0.00 %) |" in text
    assert text.endswith("**Failed: see the table and the results file.**\n")
