"""Fan-out: one delivery job per endpoint subscribed to the event's type in its scope."""

from __future__ import annotations

import asyncio
import logging
import time

import orjson
from aio_pika.abc import AbstractIncomingMessage

from svc.batch import Batcher
from svc.context import Context
from svc.events import ENVIRONMENTS, EVENT_TYPES, Event
from svc.events.store import StoredEvent
from svc.jobs import DeliveryJob

log = logging.getLogger(__name__)


async def fan_out(ctx: Context, stored: StoredEvent, endpoint_ids: list[str], trigger: str) -> int:
    """Publish one job per endpoint, each confirmed by the broker; returns the count."""
    event = stored.event
    publish = ctx.channel.default_exchange.publish
    await asyncio.gather(
        *(
            publish(
                DeliveryJob(
                    event_id=event.id,
                    event_type=event.type,
                    org=stored.org,
                    env=event.environment,
                    created_ms=event.created_ms,
                    endpoint_id=endpoint_id,
                    body=event.body,
                    trigger=trigger,
                ).to_message(),
                routing_key=ctx.topology.deliveries,
            )
            for endpoint_id in endpoint_ids
        )
    )
    if endpoint_ids:
        ctx.metrics.jobs.labels(trigger).inc(len(endpoint_ids))
    return len(endpoint_ids)


class FanOut:
    """Handler of the fan-out queue."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        # Events taken in the same millisecond share one subscriber lookup.
        self._subscribers = Batcher(ctx.endpoints.subscribers_of, 0.001)

    async def handle(self, message: AbstractIncomingMessage) -> None:
        stored = read_event(message)
        if stored is None:
            self._ctx.metrics.dropped.labels("malformed").inc()
            return
        if not message.headers.get("svc-stored"):
            await self._ctx.events.store_if_absent(stored, int(time.time() * 1000))
        event = stored.event
        endpoint_ids = await self._subscribers.submit((stored.org, event.environment, event.type))
        await fan_out(self._ctx, stored, endpoint_ids, "initial")


def read_event(message: AbstractIncomingMessage) -> StoredEvent | None:
    """The event in a message of the events exchange, or None when it is unusable."""
    headers = message.headers
    try:
        org = _text(headers["svc-org"])
        env = _text(headers["svc-env"])
        event_id = headers.get("svc-event-id")
        created_ms = headers.get("svc-created-ms")
        if event_id is None or created_ms is None:
            envelope = orjson.loads(message.body)
            event_id = event_id or envelope["id"]
            created_ms = created_ms or int(time.time() * 1000)
        event_type = message.routing_key or ""
        if event_type not in EVENT_TYPES or env not in ENVIRONMENTS:
            raise ValueError(f"unknown type {event_type!r} or environment {env!r}")
        event = Event(_text(event_id), event_type, env, int(str(created_ms)), message.body)
    except (KeyError, ValueError, TypeError, orjson.JSONDecodeError) as exc:
        log.error("dropping unusable event message %s: %s", message.message_id, exc)
        return None
    return StoredEvent(event, org)


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, str) and value:
        return value
    raise ValueError(f"expected text, got {value!r}")
