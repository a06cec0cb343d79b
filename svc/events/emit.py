"""Emitting an event on its own: one unit of work that stores it with its outbox row, then
the publish. Producers that change other state stage the event in their own unit instead
(``Publisher.stage``)."""

from __future__ import annotations

from typing import Any

from svc.context import Context
from svc.envelope import Event, new_event


async def publish_event(ctx: Context, event: Event, org: str) -> None:
    """Store ``event`` (kept ``SVC_EVENT_RETENTION``) and publish it with a confirm."""
    async with ctx.unit() as unit:
        await ctx.publisher.stage(unit, event, org)


async def emit(ctx: Context, org: str, env: str, event_type: str, data: dict[str, Any]) -> Event:
    """Create, store and publish an event of ``event_type``; returns it."""
    event = new_event(event_type, env, data)
    await publish_event(ctx, event, org)
    return event
