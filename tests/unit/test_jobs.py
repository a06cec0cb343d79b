"""Delivery jobs survive their trip through AMQP headers, defaults left out."""

from __future__ import annotations

from dataclasses import replace

from svc.events import new_event
from svc.jobs import DeliveryJob


def _round_trip(job: DeliveryJob) -> DeliveryJob:
    message = job.to_message()
    return DeliveryJob.from_message(dict(message.headers), message.body)


def test_a_first_attempt_carries_only_what_it_needs() -> None:
    job = DeliveryJob.of(new_event("payment.created", "test", {"id": "pay_1"}), "org_1", "we_1")
    assert len(job.to_message().headers) == 6
    assert _round_trip(job) == job


def test_every_field_comes_back() -> None:
    job = DeliveryJob.of(new_event("payment.created", "live", {"id": "pay_2"}), "org_2", "we_2")
    later = replace(
        job.retried(1_700_000_000_000, 3, not_before_ms=1_700_000_060_000),
        deferrals=2,
        handed_off=True,
        traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    )
    assert later.attempt == 2 and later.trigger == "retry"
    assert _round_trip(later) == later
