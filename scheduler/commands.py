"""Resend and test sends requested through the API.

A request names its event by scope and id: another scope's event with the same id is never
sent in its place, and an endpoint named by a request gets the event only when it is of the
event's scope. A resend to every subscriber leaves out those whose payload filter the event
does not meet; one naming its endpoint (a resend to it, a recover, a replay, a test send) is
sent as asked.
"""

from __future__ import annotations

import asyncio
import logging

from svc.amqp.commands import Resend
from svc.amqp.delivery_jobs import DeliveryJob
from svc.amqp.received import Received
from svc.context import Context
from svc.envelope import about
from svc.events.model import StoredEvent
from svc.orgs import Scope
from svc.webhooks.filters import meets

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
        stored = await self._event(command)
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
        else:  # every subscriber whose filter the event meets, as the fan-out chose them
            endpoint_ids = await self._ctx.endpoints.subscribers(
                stored.org, event.environment, event.type
            )
            scope = Scope(stored.org, event.environment)
            filters = await self._ctx.endpoints.filters(scope, endpoint_ids) if endpoint_ids else {}
            endpoint_ids = [e for e in endpoint_ids if meets(filters.get(e), event.body)]
        subject = about(event)  # an endpoint never hears of itself
        if subject is not None:
            endpoint_ids = [e for e in endpoint_ids if e != subject]
        await fan_out(self._ctx, stored, endpoint_ids, command.trigger)

    async def _event(self, command: Resend) -> StoredEvent | None:
        """The event ``command`` names, in its scope."""
        events = self._ctx.events
        if command.org is not None and command.env is not None:
            return await events.load(Scope(command.org, command.env), command.event_id)
        # Staged before requests named their scope: an endpoint's scope is the event's, and
        # without one the event must be the only one with its id.
        if command.endpoint_id is None:
            return await events.sole(command.event_id)
        endpoint = await self._ctx.endpoints.load(command.endpoint_id)
        if endpoint is None:
            return None
        return await events.load(Scope(endpoint.org, endpoint.env), command.event_id)


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
    async with asyncio.timeout(ctx.settings.batch_publish_timeout):
        await ctx.broker.jobs(jobs, queue)
