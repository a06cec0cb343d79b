"""Webhook endpoint operations: change an endpoint's settings, rotate its secret, and recover
the events it missed."""

from __future__ import annotations

from aiohttp import web

from api.input.endpoints import changes, expire_previous_in, refusals, since_ms
from api.input.fields import json_object, optional_json
from api.lookups import endpoint_not_found, scoped_endpoint
from api.middleware.auth import scope_of
from api.middleware.idempotency import idempotent
from svc.context import Context
from svc.db import Unit
from svc.http import CONTEXT
from svc.webhooks import flow as endpoints

routes = web.RouteTableDef()


@routes.patch("/v1/webhook_endpoints/{endpoint_id}")
async def update_endpoint(request: web.Request) -> web.Response:
    """Change the fields sent; dispatchers are told after the commit."""
    endpoint = await scoped_endpoint(request)
    ctx: Context = request.app[CONTEXT]
    found = changes(await json_object(request), endpoint, ctx.settings.allow_private_targets)
    async with ctx.unit() as unit:
        updated = await endpoints.update(ctx, unit, scope_of(request), endpoint.id, found)
    if updated is None:
        raise endpoint_not_found(endpoint.id)
    return web.json_response(updated.public())


@routes.post("/v1/webhook_endpoints/{endpoint_id}/rotate_secret")
async def rotate_secret(request: web.Request) -> web.Response:
    """A new secret, shown in this answer only; the replaced one keeps signing (alongside)
    for ``expire_previous_in`` seconds."""
    endpoint = await scoped_endpoint(request)
    seconds = expire_previous_in(await optional_json(request))
    ctx: Context = request.app[CONTEXT]

    async def rotate(unit: Unit) -> web.Response:
        rotated = await endpoints.rotate(ctx, unit, scope_of(request), endpoint.id, seconds)
        if rotated is None:
            raise endpoint_not_found(endpoint.id)
        return web.json_response({**rotated.public(), "secret": rotated.secret})

    return await idempotent(request, rotate)


@routes.post("/v1/webhook_endpoints/{endpoint_id}/recover")
async def recover(request: web.Request) -> web.Response:
    """Resend to this endpoint, oldest first, every event it has not received since ``since``
    (202: queued)."""
    endpoint = await scoped_endpoint(request)
    since = since_ms(await json_object(request))
    ctx: Context = request.app[CONTEXT]

    async def schedule(unit: Unit) -> web.Response:
        with refusals():
            count, more = await endpoints.recover(ctx, unit, endpoint, since)
        body = {"endpoint_id": endpoint.id, "events": count, "has_more": more}
        return web.json_response({**body, "status": "scheduled"}, status=202)

    return await idempotent(request, schedule)
