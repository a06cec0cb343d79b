"""Events: the scope's events newest first (a type filter, paged with the API's cursors), and
one event with its stored body, every attempt of it per endpoint and a Resend button."""

from __future__ import annotations

from urllib.parse import quote

import orjson
from aiohttp import web

from api.dashboard.lookups import endpoint_urls, scoped_event
from api.dashboard.rendering import PAGE_SIZE, page_url, redirect, render
from api.middleware.auth import scope_of
from svc.context import Context
from svc.envelope import EVENT_TYPES
from svc.http import CONTEXT
from svc.webhooks import flow

EXCERPT = 200
"""How much of each response body the attempts table shows."""

routes = web.RouteTableDef()


def pretty(body: bytes) -> str:
    """The stored body indented: orjson keeps the key order, and our bodies (written by orjson)
    round-trip exactly; a body that does not parse (a foreign producer's) is shown as stored."""
    try:
        return orjson.dumps(orjson.loads(body), option=orjson.OPT_INDENT_2).decode()
    except orjson.JSONDecodeError:
        return body.decode("utf-8", "replace")


@routes.get("/events", allow_head=False)
async def list_events(request: web.Request) -> web.Response:
    chosen = request.query.get("type", "")
    types = [chosen] if chosen in EVENT_TYPES else []
    cursor = request.query.get("cursor") or None
    found, next_cursor = await request.app[CONTEXT].events.listed(
        scope_of(request), types, None, None, PAGE_SIZE, cursor
    )
    return render(
        request,
        "events.html",
        section="developer",
        events=[stored.event for stored in found],
        event_types=EVENT_TYPES,
        chosen=types[0] if types else "",
        next_cursor=next_cursor,
        paged=cursor is not None,
    )


@routes.get("/events/{event_id}", allow_head=False)
async def show_event(request: web.Request) -> web.Response:
    stored = await scoped_event(request)
    ctx: Context = request.app[CONTEXT]
    cursor = request.query.get("cursor") or None
    attempts, next_cursor = await ctx.deliveries.for_event(
        stored.scope, stored.event.id, PAGE_SIZE, cursor
    )
    return render(
        request,
        "event.html",
        section="developer",
        event=stored.event,
        body=pretty(stored.event.body),
        attempts=attempts,
        urls=await endpoint_urls(request, stored.scope),
        excerpt=EXCERPT,
        next_cursor=next_cursor,
        paged=cursor is not None,
    )


@routes.post("/events/{event_id}/resend")
async def resend_event(request: web.Request) -> web.Response:
    """Deliver the event's stored bytes again to every endpoint subscribed to it now."""
    stored = await scoped_event(request)
    ctx: Context = request.app[CONTEXT]
    async with ctx.unit() as unit:
        await flow.resend(ctx, unit, stored)
    return redirect(page_url(request, f"/events/{quote(stored.event.id, safe='')}?notice=resent"))
