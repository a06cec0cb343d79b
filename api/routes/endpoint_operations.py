"""Webhook endpoint operations: change an endpoint's settings, rotate its secret, and recover
the events it missed."""

from __future__ import annotations

from aiohttp import web

from api.input.endpoints import changes, expire_previous_in, since_ms
from api.input.fields import json_object, optional_json
from api.lookups import endpoint_not_found, scoped_endpoint
from api.middleware.auth import scope_of
from api.middleware.idempotency import idempotent
from api.openapi import json_content, ok, path_id, ref
from api.routing import Routes
from svc.context import Context
from svc.db import Unit
from svc.http import CONTEXT, json_response
from svc.webhooks import flow
from svc.webhooks.flow import RECOVER_LIMIT

routes = Routes("Webhook endpoints", path_id("endpoint_id", "we", "webhook endpoint"))


@routes.patch(
    "/v1/webhook_endpoints/{endpoint_id}",
    "webhooks:write",
    {
        "operationId": "update_webhook_endpoint",
        "summary": "Change a webhook endpoint",
        "description": (
            "Validated as at creation; dispatchers use the change within a second. "
            "disabled true sets disabled_reason manual. While an endpoint is disabled its "
            "events are logged with outcome skipped_disabled; disabled false with replay "
            "true delivers them again, in the order they were created (at most "
            "SVC_MAX_RECOVER_EVENTS; recover sends any left), and without replay they stay "
            "skipped. replay without disabled false is 422 replay_without_enabling."
        ),
        "requestBody": {
            "required": True,
            "content": json_content(ref("WebhookEndpointUpdate")),
        },
        "responses": ok("WebhookEndpoint", "The endpoint as changed."),
    },
    "400",
    "413",
    "415",
    "422",
)
async def update_endpoint(request: web.Request) -> web.Response:
    """Change the fields sent; dispatchers are told after the commit."""
    endpoint = await scoped_endpoint(request)
    ctx: Context = request.app[CONTEXT]
    found = changes(await json_object(request), endpoint, ctx.settings.allow_private_targets)
    replay = found.pop("replay", False)
    async with ctx.unit() as unit:
        updated = await flow.update(ctx, unit, scope_of(request), endpoint.id, found)
        if updated is not None and replay:
            await flow.replay(ctx, unit, updated)
    if updated is None:
        raise endpoint_not_found(endpoint.id)
    return json_response(updated.public())


@routes.post(
    "/v1/webhook_endpoints/{endpoint_id}/rotate_secret",
    "webhooks:write",
    {
        "operationId": "rotate_webhook_secret",
        "summary": "Give the endpoint a new signing secret",
        "description": (
            "Until the replaced secret expires, every delivery carries a signature "
            "made with each secret, so receivers switch without a gap."
        ),
        "requestBody": {
            "required": False,
            "content": json_content(ref("SecretRotation")),
        },
        "responses": ok("WebhookEndpointCreated", "The endpoint with its new secret, shown once."),
    },
)
async def rotate_secret(request: web.Request) -> web.Response:
    """A new secret, shown in this answer only; the replaced one keeps signing (alongside)
    for ``expire_previous_in`` seconds."""
    endpoint = await scoped_endpoint(request)
    seconds = expire_previous_in(await optional_json(request))
    ctx: Context = request.app[CONTEXT]

    async def rotate(unit: Unit) -> web.Response:
        rotated = await flow.rotate(ctx, unit, scope_of(request), endpoint.id, seconds)
        if rotated is None:
            raise endpoint_not_found(endpoint.id)
        return json_response({**rotated.public(), "secret": rotated.secret})

    return await idempotent(request, rotate)


@routes.post(
    "/v1/webhook_endpoints/{endpoint_id}/recover",
    "webhooks:write",
    {
        "operationId": "recover_webhook_endpoint",
        "summary": "Resend every event the endpoint has not received since a time",
        "description": "Events whose latest attempt at this endpoint since then failed or "
        "was exhausted, and events stored while it was disabled, oldest "
        f"first, at most SVC_MAX_RECOVER_EVENTS ({RECOVER_LIMIT:,} unless "
        "lowered) per call. A disabled endpoint "
        "answers 409 endpoint_disabled.",
        "requestBody": {
            "required": True,
            "content": json_content(ref("RecoverRequest")),
        },
        "responses": ok("RecoverScheduled", "Queued for delivery.", "202"),
    },
)
async def recover(request: web.Request) -> web.Response:
    """Resend to this endpoint, oldest first, every event it has not received since ``since``
    (202: queued)."""
    endpoint = await scoped_endpoint(request)
    since = since_ms(await json_object(request))
    ctx: Context = request.app[CONTEXT]

    async def schedule(unit: Unit) -> web.Response:
        count, more = await flow.recover(ctx, unit, endpoint, since)
        body = {"endpoint_id": endpoint.id, "events": count, "has_more": more}
        return json_response({**body, "status": "scheduled"}, status=202)

    return await idempotent(request, schedule)
