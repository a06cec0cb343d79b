"""The payment-to-webhook section's arithmetic: per-payment latencies, targets and the report."""

from __future__ import annotations

import math

import pytest

from benchmarks import webhook_latency
from benchmarks.receipts import Receipt, spread
from benchmarks.webhook_latency import latencies


def receipt(event_id: str, at_ms: float) -> Receipt:
    return Receipt(at_ms, 204, f"/wlat/e0/{event_id}", event_id, True)


def test_latency_runs_from_the_201_to_the_receipt_and_may_be_negative() -> None:
    answered = {"pay_a": 100_010.0, "pay_b": 100_020.0, "pay_c": 100_030.0}
    arrived = {"pay_a": receipt("evt_a", 100_013), "pay_b": receipt("evt_b", 100_018)}
    found = latencies(answered, arrived)  # pay_c's webhook never came
    assert found == pytest.approx([3, -2])  # pay_b's came first


def test_spread_is_nearest_rank_and_nan_without_values() -> None:
    found = spread([float(ms) for ms in range(1, 101)])
    assert (found["p50_ms"], found["p99_ms"], found["max_ms"]) == (50, 99, 100)
    assert all(math.isnan(v) for v in spread([]).values())


def result(p99_ms: float, missing: int) -> dict[str, object]:
    return {
        "capacity_per_s": 700.0,
        "capacity_created": 3_000,
        "capacity_missing": missing,
        "rate_per_s": 350.0,
        "seconds": 60.0,
        "created": 21_000,
        "missing": missing,
        "before_201": 5,
        "p50_ms": -1.0,
        "p99_ms": p99_ms,
        "max_ms": 40.0,
    }


def test_targets_are_the_capacity_runs_webhooks_the_p99_and_the_missing_webhooks() -> None:
    met = webhook_latency.targets(result(12.0, 0))
    assert [g.name for g in met] == [
        "payment creation: payment.created webhooks missing",
        "payment to webhook p99 (201 to receipt, at half the API's capacity), ms",
        "payment to webhook: webhooks missing",
    ]
    assert [g.check(g.value) for g in met if g.value is not None] == [True, True, True]
    missed = webhook_latency.targets(result(30.0, 1))
    assert [g.check(g.value) for g in missed if g.value is not None] == [False, False, False]
    assert [g.value for g in webhook_latency.targets(None)] == [None, None, None]


def test_the_report_has_the_latency_and_its_rate() -> None:
    text = "\n".join(webhook_latency.markdown(result(12.0, 0)))
    assert "p50 -1.0 ms, p99 12.0 ms, max 40.0 ms over 21,000 payments" in text
    assert "5 of them negative" in text and "0 webhooks missing" in text
    assert "half of the 700/s one `svc api` answered at 32 in flight" in text
    assert "(3,000 payments, 0 webhooks missing)" in text
    assert webhook_latency.markdown(None) == []
