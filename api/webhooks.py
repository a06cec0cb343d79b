"""Webhook endpoint routes: create (the only time the secret is shown), list, read, delete,
its delivery log, and the test-event action."""

from __future__ import annotations

from aiohttp import web

from api.auth import scope_of
from api.problems import FieldError, InvalidInput, NotFound
from api.validation import (
    MAX_DESCRIPTION,
    check,
    event_types,
    json_object,
    list_body,
    log_page_params,
    optional_text,
    page_params,
    reject_unknown,
    webhook_url,
)
from svc.commands import Resend
from svc.context import Context
from svc.events import Event, new_event
from svc.http import CONTEXT
from svc.ids import has_prefix
from svc.store.endpoints import Endpoint

SAMPLE_PAYMENT = {"id": "pay_sample", "status": "succeeded", "amount": 2450, "currency": "CHF"}

routes = web.RouteTableDef()


async def _endpoint(request: web.Request) -> Endpoint:
    endpoint_id = request.match_info["endpoint_id"]
    endpoint = None
    if has_prefix(endpoint_id, "we"):
        endpoint = await request.app[CONTEXT].endpoints.get(scope_of(request), endpoint_id)
    if endpoint is None:
        raise NotFound("endpoint_not_found", f"No webhook endpoint {endpoint_id} in this scope.")
    return endpoint


@routes.post("/v1/webhook_endpoints")
async def create_endpoint(request: web.Request) -> web.Response:
    body = await json_object(request)
    errors: list[FieldError] = []
    reject_unknown(body, {"url", "events", "description"}, errors)
    url = webhook_url(body.get("url"), "url", errors)
    events = event_types(body.get("events"), "events", errors)
    description = optional_text(body.get("description"), "description", MAX_DESCRIPTION, errors)
    check(errors)
    endpoint = await request.app[CONTEXT].endpoints.create(
        scope_of(request), url, events, description
    )
    return web.json_response({**endpoint.public(), "secret": endpoint.secret}, status=201)


@routes.get("/v1/webhook_endpoints", allow_head=False)
async def list_endpoints(request: web.Request) -> web.Response:
    limit, cursor = page_params(request)
    if cursor is not None and not has_prefix(cursor, "we"):
        raise InvalidInput([FieldError("cursor", "invalid_cursor", "Unknown cursor.")])
    endpoints, more = await request.app[CONTEXT].endpoints.page(scope_of(request), limit, cursor)
    data = [e.public() for e in endpoints]
    next_cursor = data[-1]["id"] if more and data else None
    return web.json_response(list_body(data, next_cursor))


@routes.get("/v1/webhook_endpoints/{endpoint_id}", allow_head=False)
async def read_endpoint(request: web.Request) -> web.Response:
    return web.json_response((await _endpoint(request)).public())


@routes.delete("/v1/webhook_endpoints/{endpoint_id}")
async def delete_endpoint(request: web.Request) -> web.Response:
    endpoint = await _endpoint(request)
    await request.app[CONTEXT].endpoints.delete(scope_of(request), endpoint.id)
    return web.json_response({"id": endpoint.id, "object": "webhook_endpoint", "deleted": True})


@routes.get("/v1/webhook_endpoints/{endpoint_id}/deliveries", allow_head=False)
async def endpoint_deliveries(request: web.Request) -> web.Response:
    endpoint = await _endpoint(request)
    limit, cursor = log_page_params(request)
    records, next_cursor = await request.app[CONTEXT].deliveries.for_endpoint(
        endpoint.id, limit, cursor
    )
    return web.json_response(list_body(records, next_cursor))


@routes.post("/v1/webhook_endpoints/{endpoint_id}/test")
async def send_test_event(request: web.Request) -> web.Response:
    """Send a ``payment.succeeded`` event with sample data to this endpoint alone."""
    endpoint = await _endpoint(request)
    ctx: Context = request.app[CONTEXT]
    event = new_event("payment.succeeded", endpoint.env, dict(SAMPLE_PAYMENT))
    await store_and_send(ctx, event, endpoint)
    return web.json_response(
        {"event_id": event.id, "endpoint_id": endpoint.id, "status": "scheduled"}, status=202
    )


async def store_and_send(ctx: Context, event: Event, endpoint: Endpoint) -> None:
    """Store a test event and ask the scheduler to deliver it to one endpoint.

    It does not go through the events exchange, so no other endpoint receives it.
    """
    async with ctx.redis.pipeline(transaction=True) as pipe:
        ctx.events.stage(pipe, event, endpoint.org, outbox=False)
        await pipe.execute()
    command = Resend(event.id, trigger="test", endpoint_id=endpoint.id)
    await ctx.channel.default_exchange.publish(
        command.to_message(), routing_key=ctx.topology.commands
    )
