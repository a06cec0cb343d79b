"""Endpoint use cases: every change is announced after its commit, so that dispatchers drop
their cached copy of the scope within moments (their cache's time to live is the backstop
for a lost notice)."""

from __future__ import annotations

import orjson

from svc.context import Context
from svc.db import Unit
from svc.orgs import Scope
from svc.webhooks.model import Endpoint


async def create(
    ctx: Context, unit: Unit, scope: Scope, url: str, events: list[str], description: str
) -> Endpoint:
    endpoint = await ctx.endpoints.create(unit, scope, url, events, description)
    announce(ctx, unit, scope)
    return endpoint


async def delete(ctx: Context, unit: Unit, scope: Scope, endpoint_id: str) -> bool:
    deleted = await ctx.endpoints.delete(unit, scope, endpoint_id)
    if deleted:
        announce(ctx, unit, scope)
    return deleted


def announce(ctx: Context, unit: Unit, scope: Scope) -> None:
    """Tell dispatchers, after the commit, that the endpoints of ``scope`` changed."""
    notice = orjson.dumps([scope.org, scope.env])
    unit.after_commit(lambda: _publish(ctx, notice))


async def _publish(ctx: Context, notice: bytes) -> None:
    await ctx.redis.publish(ctx.keys.endpoint_changes, notice)
