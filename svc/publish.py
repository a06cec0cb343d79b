"""Publishing events: store with an outbox entry, publish with a broker confirm, clear the entry.

This is the one way producers (the payments API, the test-event action, any other code of
ours) emit events. A producer that changes other state in the same step passes its own
transaction to ``stage`` and calls ``publish_staged`` after it commits.
"""

from __future__ import annotations

from typing import Any

from svc.amqp import event_message
from svc.context import Context
from svc.events import Event, new_event


async def publish_staged(ctx: Context, event: Event, org: str) -> None:
    """Publish an event already stored with its outbox entry; returns once confirmed."""
    await ctx.exchange.publish(event_message(event, org), routing_key=event.type)
    ctx.metrics.events_published.labels(event.type).inc()
    await ctx.events.published(event.id)


async def publish_event(ctx: Context, event: Event, org: str) -> None:
    """Store ``event`` (retained ``SVC_EVENT_RETENTION``) and publish it with a confirm."""
    async with ctx.redis.pipeline(transaction=True) as pipe:
        ctx.events.stage(pipe, event, org)
        await pipe.execute()
    await publish_staged(ctx, event, org)


async def emit(ctx: Context, org: str, env: str, event_type: str, data: dict[str, Any]) -> Event:
    """Create, store and publish an event of ``event_type``; returns it."""
    event = new_event(event_type, env, data)
    await publish_event(ctx, event, org)
    return event
