"""Event routes: list a scope's events, read one with its per-endpoint delivery state, its log,
and resend it."""

from __future__ import annotations

import orjson
from aiohttp import web

from api.input.fields import check, list_body, page_params
from api.input.listing import created_range, event_types, page_of
from api.lookups import scoped_event
from api.middleware.auth import scope_of
from api.middleware.idempotency import idempotent
from api.problems import FieldError
from svc.context import Context
from svc.db import Unit
from svc.http import CONTEXT
from svc.webhooks import flow as endpoints

routes = web.RouteTableDef()


@routes.get("/v1/events", allow_head=False)
async def list_events(request: web.Request) -> web.Response:
    """The scope's events newest first, each its envelope exactly as delivered."""
    errors: list[FieldError] = []
    types = event_types(request, errors)
    since, until = created_range(request, errors)
    check(errors)
    listing = page_of(request)
    found, next_cursor = await request.app[CONTEXT].events.listed(
        scope_of(request), types, since, until, listing.limit, listing.cursor
    )
    data = [{**orjson.loads(stored.event.body), "object": "event"} for stored in found]
    return web.json_response(list_body(data, next_cursor), dumps=lambda v: orjson.dumps(v).decode())


@routes.get("/v1/events/{event_id}", allow_head=False)
async def read_event(request: web.Request) -> web.Response:
    stored = await scoped_event(request)
    ctx: Context = request.app[CONTEXT]
    envelope = orjson.loads(stored.event.body)
    envelope["object"] = "event"
    envelope["deliveries"] = await ctx.deliveries.statuses(stored.scope, stored.event.id)
    return web.json_response(envelope, dumps=lambda v: orjson.dumps(v).decode())


@routes.get("/v1/events/{event_id}/deliveries", allow_head=False)
async def event_deliveries(request: web.Request) -> web.Response:
    stored = await scoped_event(request)
    limit, cursor = page_params(request)
    records, next_cursor = await request.app[CONTEXT].deliveries.for_event(
        stored.scope, stored.event.id, limit, cursor
    )
    return web.json_response(list_body(records, next_cursor))


@routes.post("/v1/events/{event_id}/resend")
async def resend(request: web.Request) -> web.Response:
    """Deliver the stored bytes again to every endpoint subscribed now (202: queued)."""
    stored = await scoped_event(request)

    async def schedule(unit: Unit) -> web.Response:
        await endpoints.resend(request.app[CONTEXT], unit, stored)
        return web.json_response({"event_id": stored.event.id, "status": "scheduled"}, status=202)

    return await idempotent(request, schedule)
