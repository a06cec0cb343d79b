"""The payment-to-webhook section's arithmetic: histograms read from ``/metrics`` pages and
their differences, per-payment latencies, targets and the report."""

from __future__ import annotations

import math

import pytest
from prometheus_client import CollectorRegistry, Histogram, generate_latest

from benchmarks import webhook_latency
from benchmarks.histograms import Histogram as Read
from benchmarks.histograms import (
    counter_since,
    histogram_since,
    read_counter,
    read_histogram,
)
from benchmarks.receipts import Receipt
from benchmarks.webhook_latency import Answered, latencies, spread
from svc.metrics import Metrics


def page(observed: list[float], *, trigger: str = "initial") -> str:
    """A process's ``/metrics`` page whose wait and lag histograms observed ``observed``."""
    metrics = Metrics()
    for seconds in observed:
        metrics.event_wait.observe(seconds)
        metrics.delivery_lag.labels(trigger).observe(seconds)
    return generate_latest(metrics.registry).decode()


def test_a_histogram_is_read_from_a_page_and_its_labels_pick_the_series() -> None:
    text = page([0.0015, 0.004, 0.004, 2.0])
    wait = read_histogram(text, "svc_event_wait_seconds")
    assert wait.count == 4
    assert wait.total == pytest.approx(2.0095)
    assert dict(wait.buckets)[0.002] == 1
    assert dict(wait.buckets)[0.005] == 3
    assert wait.buckets[-1] == (math.inf, 4)
    assert read_histogram(text, "svc_delivery_lag_seconds", trigger="initial").count == 4
    assert read_histogram(text, "svc_delivery_lag_seconds", trigger="retry").count == 0


def test_the_difference_of_two_readings_is_what_was_observed_between_them() -> None:
    registry = CollectorRegistry()
    waits = Histogram("w_seconds", "w", buckets=(0.001, 0.01, 0.1), registry=registry)
    waits.observe(0.05)
    before = {"dispatcher0": generate_latest(registry).decode()}
    for seconds in (0.0005, 0.005, 0.005):
        waits.observe(seconds)
    after = {"dispatcher0": generate_latest(registry).decode(), "api": ""}
    since = histogram_since(before, after, "w_seconds")
    assert since.count == 3
    assert since.mean == pytest.approx(0.0105 / 3)
    assert dict(since.buckets) == {0.001: 1, 0.01: 3, 0.1: 3, math.inf: 3}


def test_a_process_absent_before_counts_from_zero() -> None:
    after = {"dispatcher0": page([0.003]), "dispatcher1": page([0.003, 0.004])}
    since = histogram_since({"dispatcher0": page([])}, after, "svc_event_wait_seconds")
    assert since.count == 3


def test_quantiles_are_interpolated_within_their_bucket() -> None:
    histogram = Read(((0.001, 0.0), (0.002, 50.0), (0.005, 100.0), (math.inf, 100.0)), 0.2, 100)
    assert histogram.quantile(0.5) == pytest.approx(0.002)
    assert histogram.quantile(0.25) == pytest.approx(0.0015)
    assert histogram.quantile(0.99) == pytest.approx(0.00494)


def test_a_quantile_past_the_last_bound_is_the_last_bound_and_none_is_nan() -> None:
    histogram = Read(((0.01, 1.0), (math.inf, 10.0)), 50.0, 10)
    assert histogram.quantile(0.99) == 0.01
    assert math.isnan(Read((), 0.0, 0).quantile(0.5))
    assert math.isnan(Read((), 0.0, 0).mean)


def test_counters_add_up_their_series_and_their_difference() -> None:
    metrics = Metrics()
    metrics.outbox_republished.inc(2)
    before = {"scheduler": generate_latest(metrics.registry).decode()}
    metrics.outbox_republished.inc(3)
    after = {"scheduler": generate_latest(metrics.registry).decode()}
    assert read_counter(after["scheduler"], "svc_outbox_republished") == 5
    assert counter_since(before, after, "svc_outbox_republished") == 3


def receipt(event_id: str, at_ms: float, took_ms: float = 0.0) -> Receipt:
    return Receipt(at_ms, 204, 100, f"/wlat/e0/{event_id}", event_id, True, took_ms)


def test_latency_runs_from_the_201_to_the_receipt_and_may_be_negative() -> None:
    answers = [
        Answered(201, "pay_a", 100.000, 100.010),  # 201 read at 100,010 ms
        Answered(201, "pay_b", 100.000, 100.020),  # its webhook came first
        Answered(201, "pay_c", 100.000, 100.030),  # its webhook never came
        Answered(500, None, 100.000, 100.040),
    ]
    events = {"pay_a": ("evt_a", 100_004), "pay_b": ("evt_b", 100_005), "pay_c": ("evt_c", 1)}
    arrived = {"evt_a": receipt("evt_a", 100_013, 1), "evt_b": receipt("evt_b", 100_018)}
    found = latencies(answers, events, arrived)
    assert found["webhook"] == pytest.approx([3, -2])
    assert found["created_to_201"] == pytest.approx([6, 15])
    assert found["created_to_receipt"] == pytest.approx([9, 13])
    assert found["request"] == pytest.approx([10, 20])
    assert found["receiver"] == [1, 0]


def test_spread_is_nearest_rank_and_nan_without_values() -> None:
    found = spread([float(ms) for ms in range(1, 101)])
    assert (found["p50_ms"], found["p99_ms"], found["max_ms"]) == (50, 99, 100)
    assert found["mean_ms"] == 50.5
    assert all(math.isnan(v) for v in spread([]).values())


def result(p99_ms: float, missing: int) -> dict[str, object]:
    row = {"count": 10.0, "p50_ms": 1.0, "p99_ms": 2.0, "max_ms": 3.0, "mean_ms": 1.5}
    return {
        "capacity_per_s": 700.0,
        "capacity_concurrency": 32,
        "rate_per_s": 350.0,
        "sent_per_s": 349.0,
        "seconds": 60.0,
        "created": 21_000,
        "delivered": 21_000 - missing,
        "missing": missing,
        "before_201": 5,
        "p50_ms": -1.0,
        "p99_ms": p99_ms,
        "max_ms": 40.0,
        "stages": {
            **{
                name: dict(row)
                for name in (
                    "api_request",
                    "request",
                    "created_to_201",
                    "wait",
                    "post",
                    "receiver",
                    "lag",
                    "created_to_receipt",
                )
            },
            "dispatch": {"mean_ms": 0.3},
            "outbox_republished": 0.0,
            "publish_failures": 0.0,
        },
    }


def test_targets_are_the_p99_and_the_missing_webhooks() -> None:
    met = webhook_latency.targets(result(12.0, 0))
    assert [g.name for g in met] == [
        "payment to webhook p99 (201 to receipt, at half the API's capacity), ms",
        "payment to webhook: webhooks missing",
    ]
    assert [g.check(g.value) for g in met if g.value is not None] == [True, True]
    missed = webhook_latency.targets(result(30.0, 1))
    assert [g.check(g.value) for g in missed if g.value is not None] == [False, False]
    assert [g.value for g in webhook_latency.targets(None)] == [None, None]


def test_the_report_has_the_latency_and_the_breakdown() -> None:
    lines = webhook_latency.markdown(result(12.0, 0))
    text = "\n".join(lines)
    assert "| 21,000 | 349 | -1.0 | 12.0 | 40.0 | 21,000 | 0 |" in text
    assert "`svc_event_wait_seconds` | 1.0 | 2.0 | 1.50 | 45% |" in text  # of 1.5 + 0.3 + 1.5
    assert "| taken → POST sent (intake, subscribers, signing) |" in text
    assert webhook_latency.markdown(None) == []
