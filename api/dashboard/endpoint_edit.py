"""Editing an endpoint: its URL, description and event types, through the same checks and
use case as ``PATCH /v1/webhook_endpoints/{id}``."""

from __future__ import annotations

import orjson
from aiohttp import web

from api.dashboard.lookups import endpoint_gone, scoped_endpoint
from api.dashboard.rendering import errors_by_field, page_url, redirect, render
from api.dashboard.webhook_views import endpoint_fields
from api.input.endpoints import changes
from api.middleware.auth import scope_of
from api.problems import InvalidInput
from svc.context import Context
from svc.envelope import EVENT_TYPES
from svc.http import CONTEXT
from svc.webhooks import flow
from svc.webhooks.model import Endpoint

routes = web.RouteTableDef()


def _form(
    request: web.Request,
    endpoint: Endpoint,
    status: int = 200,
    errors: dict[str, str] | None = None,
    **values: object,
) -> web.Response:
    fields = {
        "url": endpoint.shown_url,
        "description": endpoint.description or "",
        "events": endpoint.events,
        "headers": "\n".join(f"{name}: {value}" for name, value in endpoint.headers.items()),
        "filter": "" if endpoint.filter is None else orjson.dumps(endpoint.filter).decode(),
        "client_certificate": endpoint.client_certificate or "",
        "server_ca": endpoint.server_ca or "",
        **values,
    }
    return render(
        request,
        "webhook_edit.html",
        status=status,
        section="developer",
        endpoint=endpoint,
        event_types=EVENT_TYPES,
        errors=errors or {},
        form=fields,
    )


@routes.get("/webhooks/{endpoint_id}/edit", allow_head=False)
async def edit_form(request: web.Request) -> web.Response:
    return _form(request, await scoped_endpoint(request))


@routes.post("/webhooks/{endpoint_id}/edit")
async def edit_endpoint(request: web.Request) -> web.Response:
    endpoint = await scoped_endpoint(request)
    body, shown = await endpoint_fields(request)
    _tls_edits(body, endpoint)
    ctx: Context = request.app[CONTEXT]
    try:
        changed = changes(body, endpoint, ctx.settings.allow_private_targets)
    except InvalidInput as refused:
        return _form(request, endpoint, 422, errors_by_field(refused), **shown)
    async with ctx.unit() as unit:
        updated = await flow.update(ctx, unit, scope_of(request), endpoint.id, changed)
    if updated is None:
        raise endpoint_gone()
    return redirect(page_url(request, f"/webhooks/{endpoint.id}?notice=updated"))


def _tls_edits(body: dict[str, object], endpoint: Endpoint) -> None:
    """The form's certificate fields as a change: an emptied field removes what is stored,
    an unchanged certificate with no new key keeps both (the key is never shown to edit)."""
    chain = body.get("client_certificate")
    if chain is None:
        if endpoint.client_certificate is not None and "client_key" not in body:
            body["client_certificate"] = None
    elif (
        str(chain).strip() == (endpoint.client_certificate or "").strip()
        and "client_key" not in body
    ):
        del body["client_certificate"]
    if "server_ca" not in body and endpoint.server_ca is not None:
        body["server_ca"] = None
