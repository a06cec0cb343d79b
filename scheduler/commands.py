"""Resend and test sends requested through the API."""

from __future__ import annotations

import asyncio
import logging

from svc.amqp.batch_publish import Outgoing, publish_confirmed
from svc.amqp.commands import Resend
from svc.amqp.delivery_jobs import DeliveryJob
from svc.amqp.received import Received
from svc.amqp.topology import underlay
from svc.context import Context
from svc.events.store import StoredEvent

log = logging.getLogger(__name__)


class Commands:
    """Handler of the commands queue."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    async def handle(self, message: Received) -> None:
        try:
            command = Resend.from_body(message.body)
        except (KeyError, ValueError, TypeError):
            log.error("dropping malformed command %s", message.message_id)
            return
        stored = await self._ctx.events.load(command.event_id)
        if stored is None:
            log.warning("resend of unknown or expired event %s", command.event_id)
            return
        event = stored.event
        if command.endpoint_id is not None:
            endpoint = await self._ctx.endpoints.load(command.endpoint_id)
            in_scope = endpoint is not None and (endpoint.org, endpoint.env) == (
                stored.org,
                event.environment,
            )
            endpoint_ids = [command.endpoint_id] if in_scope else []
        else:
            endpoint_ids = await self._ctx.endpoints.subscribers(
                stored.org, event.environment, event.type
            )
        await fan_out(self._ctx, stored, endpoint_ids, command.trigger)


async def fan_out(ctx: Context, stored: StoredEvent, endpoint_ids: list[str], trigger: str) -> int:
    """Publish one job per endpoint, each confirmed by the broker; returns the count."""
    jobs = [DeliveryJob.of(stored.event, stored.org, e, trigger) for e in endpoint_ids]
    await publish_jobs(ctx, jobs, ctx.topology.deliveries)
    if endpoint_ids:
        ctx.metrics.jobs.labels(trigger).inc(len(endpoint_ids))
    return len(endpoint_ids)


async def publish_jobs(ctx: Context, jobs: list[DeliveryJob], queue: str) -> None:
    """Publish ``jobs`` to ``queue`` in one write; returns once the broker confirmed each."""
    if not jobs:
        return
    messages = [Outgoing(queue, m.body, m.properties) for m in map(DeliveryJob.to_message, jobs)]
    async with asyncio.timeout(ctx.settings.batch_publish_timeout):
        await publish_confirmed(await underlay(ctx.channel), "", messages)
