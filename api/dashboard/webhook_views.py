"""Developer → Webhooks: list endpoints (each with its status and its last 24 hours of
deliveries in words), create one (its secret shown this once), open one,
delete it, and send it a test event. The same kernel use cases as ``/v1/webhook_endpoints``."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from aiohttp import web

from api.dashboard.delivery_views import log_page
from api.dashboard.health_chart import chart, summary
from api.dashboard.lookups import scoped_endpoint
from api.dashboard.rendering import (
    PAGE_SIZE,
    errors_by_field,
    form_text,
    page_url,
    redirect,
    render,
)
from api.input.endpoints import new_endpoint
from api.input.fields import form_fields
from api.middleware.auth import scope_of
from api.problems import InvalidInput
from svc.context import Context
from svc.db.times import now_ms
from svc.envelope import EVENT_TYPES
from svc.http import CONTEXT
from svc.webhooks import flow
from svc.webhooks.errors import EndpointDisabled, TooManyEndpoints
from svc.webhooks.model import Endpoint

routes = web.RouteTableDef()


def _path(request: web.Request, endpoint: Endpoint) -> str:
    return page_url(request, f"/webhooks/{endpoint.id}")


@routes.get("/webhooks", allow_head=False)
async def list_endpoints(request: web.Request) -> web.Response:
    cursor = request.query.get("cursor") or None
    ctx: Context = request.app[CONTEXT]
    found, next_cursor = await ctx.endpoints.page(scope_of(request), PAGE_SIZE, cursor)
    now = now_ms()
    hours = await asyncio.gather(*(ctx.deliveries.hourly(e.id, now) for e in found))
    return render(
        request,
        "webhooks.html",
        section="developer",
        endpoints=found,
        health={e.id: summary(h) for e, h in zip(found, hours, strict=True)},
        next_cursor=next_cursor,
        paged=cursor is not None,
    )


def _form(
    request: web.Request, status: int = 200, errors: dict[str, str] | None = None, **values: object
) -> web.Response:
    fields: dict[str, object] = {"url": "", "description": "", "events": [], "headers": ""}
    fields |= {"filter": "", "client_certificate": "", "server_ca": "", **values}
    return render(
        request,
        "webhook_new.html",
        status=status,
        section="developer",
        event_types=EVENT_TYPES,
        errors=errors or {},
        form=fields,
    )


async def endpoint_fields(request: web.Request) -> tuple[dict[str, Any], dict[str, Any]]:
    """An endpoint form's fields as the API's body, field for field, so that both refuse and
    accept alike; and as the form shows them again."""
    fields = await form_fields(request)
    url, description = fields.get("url"), fields.get("description")
    chosen = [v for v in fields.getall("events", []) if isinstance(v, str)]
    body: dict[str, Any] = {"url": url, "events": chosen, "description": description}
    shown: dict[str, Any] = {
        "url": form_text(url),
        "description": form_text(description),
        "events": chosen,
    }
    for name in ("headers", "filter"):
        if name in fields:  # a form of this version: the fields are there, if empty
            text = shown[name] = form_text(fields.get(name))
            body[name] = headers_of(text) if name == "headers" else filter_of(text)
    for name in ("client_certificate", "client_key", "server_ca"):
        text = form_text(fields.get(name)).strip()
        if text:  # empty: none on a new endpoint; on an edit, the stored one is kept
            body[name] = text + "\n"
        if name != "client_key":  # the key is never shown again, not even on a refusal
            shown[name] = text
    return body, shown


def headers_of(text: str) -> dict[str, str]:
    """The headers field, one ``Name: value`` per line, as the API's object; a line without
    a colon is a name the API refuses, so the form names it."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if line.strip():
            name, _, value = line.partition(":")
            found[name.strip()] = value.strip()
    return found


def filter_of(text: str) -> object:
    """The filter field as the API's value: JSON, or nothing when empty; text that is no
    JSON goes as is, so the API names it."""
    if not text.strip():
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


@routes.get("/webhooks/new", allow_head=False)
async def endpoint_form(request: web.Request) -> web.Response:
    return _form(request)


@routes.post("/webhooks")
async def create_endpoint(request: web.Request) -> web.Response:
    """Create the endpoint and show its secret, this once (the page is never cached)."""
    body, shown = await endpoint_fields(request)
    ctx: Context = request.app[CONTEXT]
    try:
        new = new_endpoint(body, ctx.settings.allow_private_targets)
    except InvalidInput as refused:
        return _form(request, 422, errors_by_field(refused), **shown)
    try:
        async with ctx.unit() as unit:
            endpoint = await flow.create(
                ctx, unit, scope_of(request), new.url, new.events, new.description, new.options
            )
    except TooManyEndpoints as refused:
        full = f"This environment has {refused.most} endpoints, its most: delete one first."
        kept = {"url": new.url, "description": new.description, "events": new.events}
        return _form(request, 422, {"url": full}, **kept)
    return render(
        request, "webhook_created.html", status=201, section="developer", endpoint=endpoint
    )


@routes.get("/webhooks/{endpoint_id}", allow_head=False)
async def show_endpoint(request: web.Request) -> web.Response:
    """The endpoint, its delivery health over the last 24 hours and its delivery log
    (refreshed by ``static/deliveries.js``)."""
    endpoint = await scoped_endpoint(request)
    cursor = request.query.get("cursor") or None
    log = await log_page(request, endpoint, cursor)
    ctx: Context = request.app[CONTEXT]
    hours = await ctx.deliveries.hourly(endpoint.id, now_ms())
    return render(
        request,
        "webhook.html",
        section="developer",
        endpoint=endpoint,
        log=log,
        paged=bool(cursor),
        health=chart(hours),
    )


@routes.get("/webhooks/{endpoint_id}/delete", allow_head=False)
async def confirm_delete(request: web.Request) -> web.Response:
    endpoint = await scoped_endpoint(request)
    return render(request, "webhook_delete.html", section="developer", endpoint=endpoint)


@routes.post("/webhooks/{endpoint_id}/delete")
async def delete_endpoint(request: web.Request) -> web.Response:
    endpoint = await scoped_endpoint(request)
    ctx: Context = request.app[CONTEXT]
    async with ctx.unit() as unit:
        await flow.delete(ctx, unit, scope_of(request), endpoint.id)
    return redirect(page_url(request, "/webhooks?notice=deleted"))


@routes.post("/webhooks/{endpoint_id}/test")
async def send_test_event(request: web.Request) -> web.Response:
    """Send a ``payment.succeeded`` event with sample data to this endpoint alone."""
    endpoint = await scoped_endpoint(request)
    ctx: Context = request.app[CONTEXT]
    try:
        async with ctx.unit() as unit:
            await flow.send_test(ctx, unit, endpoint)
    except EndpointDisabled:
        return redirect(f"{_path(request, endpoint)}?notice=endpoint_disabled")
    return redirect(f"{_path(request, endpoint)}?notice=test_sent")
