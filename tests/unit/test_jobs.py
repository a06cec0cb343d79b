"""Delivery jobs survive their trip through AMQP headers, defaults left out."""

from __future__ import annotations

from dataclasses import replace

from svc.amqp.delivery_jobs import DeliveryJob
from svc.envelope import new_event


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


def test_the_sweeps_event_properties_are_the_event_messages_byte_for_byte() -> None:
    from pamqp.header import ContentHeader

    from svc.amqp.messages import event_message, event_properties

    event = new_event("payment.succeeded", "live", {"id": "pay_1", "amount": 2450})
    trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    for traceparent in (None, trace):  # the sweep's, and a request's publish
        message = event_message(event, "org_1", traceparent)
        properties = event_properties(event, "org_1", traceparent=traceparent)
        sent = ContentHeader(0, len(event.body), properties).marshal()
        assert sent == ContentHeader(0, len(event.body), message.properties).marshal()


def test_a_retry_carries_when_it_was_due() -> None:
    job = DeliveryJob.of(new_event("payment.created", "live", {"id": "pay_3"}), "org_3", "we_3")
    retry = job.retried(1_700_000_000_000, 2, due_ms=1_700_000_005_000)
    assert retry.due_ms == 1_700_000_005_000 and _round_trip(retry) == retry
    assert "svc-due-ms" not in job.to_message().headers
    assert retry.deferred().due_ms == retry.due_ms  # held back, still late by the same time


def test_a_deferred_hand_off_still_checks_for_the_delivery_it_stands_in_for() -> None:
    job = DeliveryJob.of(new_event("payment.created", "live", {"id": "pay_4"}), "org_4", "we_4")
    assert job.handed().deferred().handed_off
    assert not job.deferred().handed_off
