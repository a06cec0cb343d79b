"""Webhook endpoint routes: create (a secret is shown only at creation and rotation), list,
read, delete, its delivery log and that of the whole scope (both searchable), and the
test-event action."""

from __future__ import annotations

from aiohttp import web

from api.input.deliveries import log_filter
from api.input.endpoints import new_endpoint
from api.input.fields import json_object, list_body, page_params
from api.lookups import scoped_endpoint
from api.middleware.auth import scope_of
from api.middleware.idempotency import idempotent
from api.openapi import (
    OPAQUE_CURSOR,
    Json,
    created_query,
    json_content,
    ok,
    page_query,
    path_id,
    ref,
)
from api.routes.events import EVENT_ID_VALUE
from api.routing import Routes
from svc.context import Context
from svc.db import Unit
from svc.envelope import EVENT_TYPES
from svc.events.model import LOGGED_OUTCOMES
from svc.http import CONTEXT, json_response
from svc.webhooks import flow

routes = Routes("Webhook endpoints", path_id("endpoint_id", "we", "webhook endpoint"))


@routes.post(
    "/v1/webhook_endpoints",
    "webhooks:write",
    {
        "operationId": "create_webhook_endpoint",
        "summary": "Create a webhook endpoint",
        "description": (
            "An organisation has at most SVC_MAX_ENDPOINTS_PER_SCOPE endpoints in "
            "one environment; one more is 422 too_many_endpoints."
        ),
        "requestBody": {
            "required": True,
            "content": json_content(ref("WebhookEndpointCreate")),
        },
        "responses": ok("WebhookEndpointCreated", "Created; secret is shown only here.", "201"),
    },
    "400",
    "413",
    "415",
    "422",
)
async def create_endpoint(request: web.Request) -> web.Response:
    body = await json_object(request)
    ctx: Context = request.app[CONTEXT]
    new = new_endpoint(body, ctx.settings.allow_private_targets)

    async def create(unit: Unit) -> web.Response:
        endpoint = await flow.create(
            ctx, unit, scope_of(request), new.url, new.events, new.description, new.options
        )
        return json_response({**endpoint.public(), "secret": endpoint.secret}, status=201)

    return await idempotent(request, create)


@routes.get(
    "/v1/webhook_endpoints",
    "webhooks:read",
    {
        "operationId": "list_webhook_endpoints",
        "summary": "List webhook endpoints",
        "parameters": page_query(OPAQUE_CURSOR),
        "responses": ok("WebhookEndpointList", "A page of endpoints."),
    },
    "422",
)
async def list_endpoints(request: web.Request) -> web.Response:
    limit, cursor = page_params(request)
    ctx: Context = request.app[CONTEXT]
    endpoints, next_cursor = await ctx.endpoints.page(scope_of(request), limit, cursor)
    return json_response(list_body([e.public() for e in endpoints], next_cursor))


@routes.get(
    "/v1/webhook_endpoints/{endpoint_id}",
    "webhooks:read",
    {
        "operationId": "read_webhook_endpoint",
        "summary": "Read a webhook endpoint (never its secret)",
        "responses": ok("WebhookEndpoint", "The endpoint."),
    },
    "404",
)
async def read_endpoint(request: web.Request) -> web.Response:
    return json_response((await scoped_endpoint(request)).public())


@routes.delete(
    "/v1/webhook_endpoints/{endpoint_id}",
    "webhooks:write",
    {
        "operationId": "delete_webhook_endpoint",
        "summary": "Delete a webhook endpoint",
        "responses": ok("WebhookEndpointDeleted", "Deleted."),
    },
    "404",
)
async def delete_endpoint(request: web.Request) -> web.Response:
    endpoint = await scoped_endpoint(request)

    async def remove(unit: Unit) -> web.Response:
        await flow.delete(request.app[CONTEXT], unit, scope_of(request), endpoint.id)
        body = {"id": endpoint.id, "object": "webhook_endpoint", "deleted": True}
        return json_response(body)

    return await idempotent(request, remove)


_SEARCH: list[Json] = [
    {
        "name": "outcome",
        "in": "query",
        "required": False,
        "description": "Only attempts with this outcome; skipped_disabled: events not sent "
        "because the endpoint was disabled.",
        "schema": {"type": "string", "enum": list(LOGGED_OUTCOMES)},
    },
    {
        "name": "status_code",
        "in": "query",
        "required": False,
        "description": "Only attempts answered with this response code (503) or a code of "
        "this class (5xx).",
        "schema": {
            "type": "string",
            "pattern": "^[1-5]([0-9]{2}|[xX]{2})$",
            "examples": ["503", "5xx"],
        },
    },
    {
        "name": "event_type",
        "in": "query",
        "required": False,
        "description": "Only attempts of events of this type.",
        "schema": {"type": "string", "enum": list(EVENT_TYPES)},
    },
    {
        "name": "event_id",
        "in": "query",
        "required": False,
        "description": "Only attempts of this event.",
        "schema": EVENT_ID_VALUE,
    },
    *created_query(),
]
_SEARCH_TEXT = (
    "Filters combine; created[gte] and created[lt] bound the attempt's time. A cursor "
    "belongs to the filters it was given with: the same cursor with other filters is 422 "
    "invalid_cursor."
)


@routes.get(
    "/v1/webhook_endpoints/{endpoint_id}/deliveries",
    "webhooks:read",
    {
        "operationId": "list_endpoint_deliveries",
        "summary": "Delivery log of an endpoint, newest first",
        "description": _SEARCH_TEXT,
        "parameters": [*page_query(ref("LogCursor")), *_SEARCH],
        "responses": ok("DeliveryAttemptList", "A page of delivery attempts."),
    },
    "404",
    "422",
)
async def endpoint_deliveries(request: web.Request) -> web.Response:
    endpoint = await scoped_endpoint(request)
    search = log_filter(request)
    limit, cursor = page_params(request)
    records, next_cursor = await request.app[CONTEXT].deliveries.for_endpoint(
        endpoint.id, limit, cursor, search
    )
    return json_response(list_body(records, next_cursor))


@routes.get(
    "/v1/deliveries",
    "webhooks:read",
    {
        "operationId": "list_deliveries",
        "summary": "Delivery log of every endpoint of the key's scope, newest first",
        "description": _SEARCH_TEXT,
        "parameters": [*page_query(ref("LogCursor")), *_SEARCH],
        "responses": ok("DeliveryAttemptList", "A page of delivery attempts."),
    },
    "422",
)
async def scope_deliveries(request: web.Request) -> web.Response:
    search = log_filter(request)
    limit, cursor = page_params(request)
    records, next_cursor = await request.app[CONTEXT].deliveries.for_scope(
        scope_of(request), limit, cursor, search
    )
    return json_response(list_body(records, next_cursor))


@routes.post(
    "/v1/webhook_endpoints/{endpoint_id}/test",
    "webhooks:write",
    {
        "operationId": "send_test_event",
        "summary": "Send a payment.succeeded event with sample data to this endpoint",
        "description": "A disabled endpoint answers 409 endpoint_disabled.",
        "responses": ok("TestEventScheduled", "Queued for delivery.", "202"),
    },
    "404",
)
async def send_test_event(request: web.Request) -> web.Response:
    """Send a ``payment.succeeded`` event with sample data to this endpoint alone."""
    endpoint = await scoped_endpoint(request)
    ctx: Context = request.app[CONTEXT]

    async def send(unit: Unit) -> web.Response:
        event = await flow.send_test(ctx, unit, endpoint)
        return json_response(
            {"event_id": event.id, "endpoint_id": endpoint.id, "status": "scheduled"}, status=202
        )

    return await idempotent(request, send)
