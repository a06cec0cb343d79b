"""Endpoint use cases of every front door: every change is announced after its commit, so that
dispatchers drop their cached copy of the scope within moments (their cache's time to live is
the backstop for a lost notice); sends to one endpoint go through the command outbox."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from svc.amqp.commands import Resend
from svc.db import Unit
from svc.db.times import now_ms
from svc.envelope import Event, new_event
from svc.events.flow import stage_command, stage_commands
from svc.events.model import StoredEvent
from svc.notices import flow as notices
from svc.notices.model import ENABLED
from svc.orgs.model import Scope
from svc.settings import MAX_RECOVER_EVENTS
from svc.webhooks.errors import EndpointDisabled, TooManyEndpoints
from svc.webhooks.filters import body_filter
from svc.webhooks.model import DISABLED_FAILING, DISABLED_MANUALLY, Endpoint, Options

if TYPE_CHECKING:
    from svc.context import Context

DISABLE_BATCH = 500
DEFAULT_EXPIRE_PREVIOUS = 86_400
"""Seconds a rotated-out secret keeps signing alongside the new one, unless told otherwise."""
SAMPLE_PAYMENT = {"id": "pay_sample", "status": "succeeded", "amount": 2450, "currency": "CHF"}
"""The data of a test event."""
RECOVER_LIMIT = MAX_RECOVER_EVENTS
"""Most events one recover request sends, so that one request stays bounded
(``SVC_MAX_RECOVER_EVENTS`` may lower it)."""


async def create(
    ctx: Context,
    unit: Unit,
    scope: Scope,
    url: str,
    events: list[str],
    description: str,
    options: Options = Options(),  # noqa: B008 (frozen, so one shared default is safe)
) -> Endpoint:
    """A new endpoint of ``scope``; ``TooManyEndpoints`` when it has its most already."""
    most = ctx.settings.max_endpoints_per_scope
    if most > 0 and await ctx.endpoints.count_locked(unit, scope) >= most:
        raise TooManyEndpoints(most)
    endpoint = await ctx.endpoints.create(unit, scope, url, events, description, options)
    announce(ctx, unit, scope)
    return endpoint


async def delete(ctx: Context, unit: Unit, scope: Scope, endpoint_id: str) -> bool:
    deleted = await ctx.endpoints.delete(unit, scope, endpoint_id)
    if deleted:
        announce(ctx, unit, scope)
    return deleted


async def update(
    ctx: Context, unit: Unit, scope: Scope, endpoint_id: str, changes: Mapping[str, Any]
) -> Endpoint | None:
    """Change an endpoint (see ``Endpoints.update``); None when it is not in ``scope``.
    Turning it off or on by hand tells its organisation (``webhook_endpoint.disabled`` with
    reason ``manual``, ``webhook_endpoint.enabled``) in the same transaction."""
    was_disabled = None
    if changes.get("disabled") is not None:
        was_disabled = await ctx.endpoints.disabled_locked(unit, scope, endpoint_id)
    endpoint = await ctx.endpoints.update(unit, scope, endpoint_id, changes, now_ms())
    if endpoint is not None and changes:
        announce(ctx, unit, scope)
    if endpoint is not None and was_disabled is not None and was_disabled != endpoint.disabled:
        if endpoint.disabled:
            await notices.tell_disabled(
                ctx, unit, scope, endpoint.id, endpoint.url, DISABLED_MANUALLY
            )
        else:
            await notices.tell(ctx, unit, ENABLED, scope, endpoint.id, endpoint.url)
    return endpoint


async def rotate(
    ctx: Context,
    unit: Unit,
    scope: Scope,
    endpoint_id: str,
    expire_previous_in: int = DEFAULT_EXPIRE_PREVIOUS,
) -> Endpoint | None:
    """A new secret; the current one keeps signing for ``expire_previous_in`` seconds more
    (0: it stops at once). None when the endpoint is not in ``scope``."""
    expires = now_ms() + expire_previous_in * 1000 if expire_previous_in > 0 else None
    endpoint = await ctx.endpoints.rotate(unit, scope, endpoint_id, expires)
    if endpoint is not None:
        announce(ctx, unit, scope)
    return endpoint


async def recover(ctx: Context, unit: Unit, endpoint: Endpoint, since_ms: int) -> tuple[int, bool]:
    """Stage a resend to ``endpoint`` of every event it has not received since ``since_ms``
    and that meets its filter, oldest first, at most ``SVC_MAX_RECOVER_EVENTS`` (never more
    than ``RECOVER_LIMIT``); returns how many, and whether more are left.
    ``EndpointDisabled`` when it is off."""
    _refuse_disabled(endpoint)
    limit = min(RECOVER_LIMIT, ctx.settings.max_recover_events)
    event_ids = await ctx.endpoints.undelivered(unit, endpoint, since_ms, limit + 1)
    wanted = event_ids[:limit]
    if endpoint.filter:  # events its filter leaves out were never meant for it
        bodies = await ctx.events.bodies(unit, Scope(endpoint.org, endpoint.env), wanted)
        keeps = body_filter(endpoint.filter)
        wanted = [e for e in wanted if e in bodies and keeps(bodies[e])]
    commands = [
        Resend(event_id, "resend", endpoint.id, endpoint.org, endpoint.env) for event_id in wanted
    ]
    await stage_commands(ctx, unit, commands)
    return len(commands), len(event_ids) > limit


async def replay(ctx: Context, unit: Unit, endpoint: Endpoint) -> int:
    """Stage a resend to ``endpoint`` (enabled in ``unit``) of the events skipped while it was
    disabled (logged ``skipped_disabled``, nothing tried there since), in the order they were
    created, at most ``SVC_MAX_RECOVER_EVENTS``; returns how many. Those left over stay in
    the log as skipped, and a recover since the disabling sends them."""
    limit = min(RECOVER_LIMIT, ctx.settings.max_recover_events)
    event_ids = await ctx.deliveries.skipped(unit, endpoint.id, limit)
    commands = [
        Resend(event_id, "resend", endpoint.id, endpoint.org, endpoint.env)
        for event_id in event_ids
    ]
    await stage_commands(ctx, unit, commands)
    return len(commands)


async def send_test(ctx: Context, unit: Unit, endpoint: Endpoint) -> Event:
    """Store a ``payment.succeeded`` event with sample data for ``endpoint`` alone, and the
    request to deliver it, in ``unit``; ``EndpointDisabled`` when it is off.

    The event does not go through the events exchange (no event outbox row), so no other
    endpoint receives it; the request goes through the command outbox, so it is never lost.
    """
    _refuse_disabled(endpoint)
    event = new_event("payment.succeeded", endpoint.env, dict(SAMPLE_PAYMENT))
    await ctx.events.insert(unit, event, endpoint.org, outbox=False)
    await stage_command(
        ctx, unit, Resend(event.id, "test", endpoint.id, endpoint.org, endpoint.env)
    )
    return event


async def resend(
    ctx: Context, unit: Unit, stored: StoredEvent, endpoint: Endpoint | None = None
) -> None:
    """Stage a new delivery of a stored event's bytes: to ``endpoint`` alone
    (``EndpointDisabled`` when it is off), or to every endpoint of its scope subscribed to it
    now. The request names the event's scope, so only that scope's event is sent."""
    if endpoint is not None:
        _refuse_disabled(endpoint)
    endpoint_id = None if endpoint is None else endpoint.id
    scope = stored.scope
    command = Resend(stored.event.id, "resend", endpoint_id, scope.org, scope.env)
    await stage_command(ctx, unit, command)


def _refuse_disabled(endpoint: Endpoint) -> None:
    if endpoint.disabled:
        raise EndpointDisabled(endpoint.id)


async def disable_failing(ctx: Context, window: float, at_ms: int | None = None) -> list[str]:
    """Disable every endpoint whose attempts have all failed for ``window`` seconds (see
    ``svc.webhooks.store``), announcing each change and telling its organisation
    (``webhook_endpoint.disabled``, reason ``failing``); returns their ids."""
    at_ms = now_ms() if at_ms is None else at_ms
    cutoff = at_ms - round(window * 1000)
    disabled: list[str] = []
    while found := await ctx.endpoints.failing(cutoff, DISABLE_BATCH):
        async with ctx.unit() as unit:
            done = await ctx.endpoints.disable_failing(unit, found, cutoff, at_ms)
            for scope in {d.scope for d in done}:
                announce(ctx, unit, scope)
            for d in done:
                await notices.tell_disabled(ctx, unit, d.scope, d.id, d.url, DISABLED_FAILING)
        disabled += [d.id for d in done]
        if len(found) < DISABLE_BATCH:
            break
    return disabled


def announce(ctx: Context, unit: Unit, scope: Scope) -> None:
    """Tell dispatchers, after the commit, that the endpoints of ``scope`` changed."""
    notice = orjson.dumps([scope.org, scope.env])
    unit.after_commit(lambda: _publish(ctx, notice))


async def _publish(ctx: Context, notice: bytes) -> None:
    await ctx.redis.publish(ctx.keys.endpoint_changes, notice)
