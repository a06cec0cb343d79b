"""The naive-API section's targets and report: the ratios at each concurrency, the webhooks,
and rate limiting's cost measured on the same API process."""

from __future__ import annotations

from typing import Any

from benchmarks import api_ceiling


def result(limited_ratio: float, missing: int) -> dict[str, Any]:
    row = {"rate_per_s": 1000.0, "p99_ms": 60.0}
    return {
        "count": 3_000,
        "rounds": 3,
        "rows": {f"{name}@{c}": row for name in ("naive API", "svc api") for c in (32, 128)},
        "ratio": {"32": 0.8, "128": 0.75},
        "rate_limit": {
            "statuses": {"201": 54_000},
            "unlimited_per_s": 1000.0,
            "limited_per_s": 1000.0 * limited_ratio,
            "limited_ratio": limited_ratio,
        },
        "created": 18_000,
        "delivered": 18_000 - missing,
        "missing": missing,
    }


def test_targets_are_the_ratios_the_webhooks_and_rate_limitings_cost() -> None:
    met = api_ceiling.targets(result(0.97, 0))
    assert [g.name for g in met] == [
        "payment creation ÷ naive API, 32 in flight",
        "payment creation ÷ naive API, 128 in flight",
        "payment.created missing (naive API run)",
        "payment creation with per-key rate limiting on ÷ off",
    ]
    assert all(g.value is not None and g.check(g.value) for g in met)
    missed = api_ceiling.targets(result(0.94, 1))
    assert [g.value is not None and g.check(g.value) for g in missed] == [True, True, False, False]
    assert [g.value for g in api_ceiling.targets(None)] == [None] * 4


def test_the_report_gives_both_rates_of_the_rate_limit_rounds() -> None:
    text = "\n".join(api_ceiling.markdown(result(0.95, 0)))
    assert "18,000 of 18,000 `payment.created` delivered" in text
    assert "at 32 in flight: 950/s counted against 1,000/s not" in text
    older = result(0.95, 0)
    del older["rate_limit"]  # a run recorded before the section measured it
    assert "–/s counted against –/s not" in "\n".join(api_ceiling.markdown(older))
