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
from api.openapi import (
    Json,
    created_query,
    ok,
    page_query,
    ref,
)
from api.problems import FieldError
from api.routing import Routes
from svc.context import Context
from svc.db import Unit
from svc.envelope import EVENT_TYPES
from svc.http import CONTEXT, json_response
from svc.ids import MAX_ID_LENGTH
from svc.webhooks import flow

# Events of this service have evt_ ids; a producer publishing on the events exchange keeps
# its own (svc.ids.is_opaque_id), so the id is described by what is accepted, not a prefix.
EVENT_ID_VALUE: Json = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_ID_LENGTH,
    "pattern": "^[^/\\u0000-\\u001f\\u007f-\\u009f]+$",
    "description": (
        "Identifier of the event: evt_… for events of this service; an event another producer "
        "published on the events exchange keeps the id it was given there (1 to 255 printable "
        "characters without '/', such as order-123 or a UUID)."
    ),
    "examples": ["evt_01jd3q8b5k2c7r9m4n6p0s1t2v", "order-123"],
}
EVENT_ID: Json = {
    "name": "event_id",
    "in": "path",
    "required": True,
    "description": "The event's id; an id of no event in the key's scope is 404 event_not_found.",
    "schema": EVENT_ID_VALUE,
}
routes = Routes("Events", EVENT_ID)
_TYPES: Json = {
    "name": "type",
    "in": "query",
    "required": False,
    "description": (
        "Only events of these types: repeat it (type=a&type=b) or separate them with commas "
        "(type=a,b). Any other name is 422 unknown_event_type."
    ),
    "style": "form",
    "explode": True,
    "schema": {"type": "array", "items": {"type": "string", "enum": list(EVENT_TYPES)}},
}


@routes.get(
    "/v1/events",
    "events:read",
    {
        "operationId": "list_events",
        "summary": "List the events of the key's scope, newest first",
        "description": (
            "Events stored in this scope (those of other producers included) "
            "while they are retained (SVC_EVENT_RETENTION). Reconcile by listing "
            "the events created since the last one you processed."
        ),
        "parameters": [*page_query(ref("LogCursor")), _TYPES, *created_query()],
        "responses": ok("EventList", "A page of events."),
    },
    "422",
)
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
    return json_response(list_body(data, next_cursor))


@routes.get(
    "/v1/events/{event_id}",
    "events:read",
    {
        "operationId": "read_event",
        "summary": "Read an event and its delivery state per endpoint",
        "responses": ok("Event", "The event."),
    },
    "404",
)
async def read_event(request: web.Request) -> web.Response:
    stored = await scoped_event(request)
    ctx: Context = request.app[CONTEXT]
    envelope = orjson.loads(stored.event.body)
    envelope["object"] = "event"
    envelope["deliveries"] = await ctx.deliveries.statuses(stored.scope, stored.event.id)
    return json_response(envelope)


@routes.get(
    "/v1/events/{event_id}/deliveries",
    "events:read",
    {
        "operationId": "list_event_deliveries",
        "summary": "Delivery log of an event, newest first",
        "parameters": page_query(ref("LogCursor")),
        "responses": ok("DeliveryAttemptList", "A page of delivery attempts."),
    },
    "404",
    "422",
)
async def event_deliveries(request: web.Request) -> web.Response:
    stored = await scoped_event(request)
    limit, cursor = page_params(request)
    records, next_cursor = await request.app[CONTEXT].deliveries.for_event(
        stored.scope, stored.event.id, limit, cursor
    )
    return json_response(list_body(records, next_cursor))


@routes.post(
    "/v1/events/{event_id}/resend",
    "events:write",
    {
        "operationId": "resend_event",
        "summary": "Deliver the event again to every endpoint subscribed now",
        "responses": ok("ResendScheduled", "Queued for delivery.", "202"),
    },
    "404",
)
async def resend(request: web.Request) -> web.Response:
    """Deliver the stored bytes again to every endpoint subscribed now (202: queued)."""
    stored = await scoped_event(request)

    async def schedule(unit: Unit) -> web.Response:
        await flow.resend(request.app[CONTEXT], unit, stored)
        return json_response({"event_id": stored.event.id, "status": "scheduled"}, status=202)

    return await idempotent(request, schedule)
