"""The AMQP messages of the contract: an event on the events exchange, and a message kept
in ``<ns>.rejected`` (names and headers are listed in ``svc.amqp.topology``)."""

from __future__ import annotations

from typing import Any

import aio_pika
import aiormq

from svc.amqp.received import Received
from svc.envelope import Event
from svc.tracing import TRACEPARENT

AGAIN = "svc-again"
"""Header of an event published again (by the outbox sweep): its first publish may have
reached the broker, so its deliveries may have been made already."""


def _event_headers(event: Event, org: str, again: bool = False) -> dict[str, Any]:
    headers: dict[str, Any] = {
        "svc-org": org,
        "svc-env": event.environment,
        "svc-event-id": event.id,
        "svc-created-ms": event.created_ms,
        "svc-stored": True,
    }
    if again:
        headers[AGAIN] = True
    return headers


def event_message(event: Event, org: str, traceparent: str | None = None) -> aio_pika.Message:
    """The AMQP message of an event on the events exchange (with the publish's trace)."""
    message = aio_pika.Message(
        event.body,
        content_type="application/json",
        delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
        message_id=event.id,
        type=event.type,
        headers=_event_headers(event, org),
    )
    if traceparent:
        message.headers[TRACEPARENT] = traceparent
    return message


def event_properties(
    event: Event, org: str, again: bool = False, traceparent: str | None = None
) -> aiormq.spec.Basic.Properties:
    """The properties of ``event_message``, for publishing on aiormq; ``again`` marks an event
    published again (``AGAIN``)."""
    headers = _event_headers(event, org, again)
    if traceparent:
        headers[TRACEPARENT] = traceparent
    return aiormq.spec.Basic.Properties(
        content_type="application/json",
        delivery_mode=aio_pika.DeliveryMode.PERSISTENT.value,
        priority=0,  # as aio-pika sends it, so both paths put the same bytes on the wire
        message_id=event.id,
        message_type=event.type,
        headers=headers,
    )


def rejected_message(message: Received, reason: str, detail: str) -> aio_pika.Message:
    """``message`` as kept in ``<ns>.rejected``: its body and headers, its routing key and why.

    ``user_id`` and ``expiration`` are left out: the broker refuses a ``user_id`` other than
    ours, and an expiration would drop the message from the queue unseen.
    """
    properties = message.properties
    headers = {
        **message.headers,
        "svc-routing-key": message.routing_key,
        "svc-rejected-reason": reason,
        "svc-rejected-detail": detail,
    }
    return aio_pika.Message(
        message.body,
        headers=headers,
        content_type=properties.content_type,
        content_encoding=properties.content_encoding,
        delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
        priority=properties.priority,
        correlation_id=properties.correlation_id,
        reply_to=properties.reply_to,
        message_id=properties.message_id,
        timestamp=properties.timestamp,
        type=properties.message_type,
        app_id=properties.app_id,
    )
