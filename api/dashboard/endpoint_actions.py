"""An endpoint page's operations beyond the log: turn it off and on, rotate its signing secret
(the new one shown this once, the old one signing alongside for a day) and recover the events
it missed. The same kernel use cases as the ``/v1/webhook_endpoints`` routes."""

from __future__ import annotations

from aiohttp import web

from api.dashboard.lookups import endpoint_gone, scoped_endpoint
from api.dashboard.rendering import page_url, redirect, render
from api.input.fields import form_fields
from api.middleware.auth import scope_of
from svc.context import Context
from svc.db.times import now_ms
from svc.http import CONTEXT
from svc.webhooks import flow
from svc.webhooks.errors import EndpointDisabled
from svc.webhooks.model import Endpoint

routes = web.RouteTableDef()

RECOVER_WINDOWS = {"1": 3_600, "6": 6 * 3_600, "24": 86_400, "72": 3 * 86_400, "168": 7 * 86_400}
"""The recover form's choices: hours back (the field's value) to seconds."""


def _page(request: web.Request, endpoint: Endpoint, notice: str) -> web.Response:
    return redirect(page_url(request, f"/webhooks/{endpoint.id}?notice={notice}"))


async def _switch(request: web.Request, disabled: bool, replay: bool = False) -> web.Response:
    endpoint = await scoped_endpoint(request)
    ctx: Context = request.app[CONTEXT]
    async with ctx.unit() as unit:
        changed = await flow.update(
            ctx, unit, scope_of(request), endpoint.id, {"disabled": disabled}
        )
        if changed is not None and replay:
            await flow.replay(ctx, unit, changed)
    if changed is None:
        raise endpoint_gone()
    if disabled:
        return _page(request, changed, "disabled")
    return _page(request, changed, "replaying" if replay else "enabled")


@routes.post("/webhooks/{endpoint_id}/disable")
async def disable_endpoint(request: web.Request) -> web.Response:
    """Stop new deliveries; events keep being stored, so a recover can send them later."""
    return await _switch(request, True)


@routes.post("/webhooks/{endpoint_id}/enable")
async def enable_endpoint(request: web.Request) -> web.Response:
    """Turn it on; with ``replay`` (the second button) the events skipped while it was off
    are delivered too, in the order they were created."""
    form = await form_fields(request)
    return await _switch(request, False, replay=form.get("replay") == "true")


@routes.post("/webhooks/{endpoint_id}/rotate")
async def rotate_secret(request: web.Request) -> web.Response:
    """A new secret, shown on this page only; the replaced one signs alongside for a day."""
    endpoint = await scoped_endpoint(request)
    ctx: Context = request.app[CONTEXT]
    async with ctx.unit() as unit:
        rotated = await flow.rotate(ctx, unit, scope_of(request), endpoint.id)
    if rotated is None:
        raise endpoint_gone()
    return render(
        request, "webhook_rotated.html", status=201, section="developer", endpoint=rotated
    )


@routes.post("/webhooks/{endpoint_id}/recover")
async def recover_endpoint(request: web.Request) -> web.Response:
    """Resend, oldest first, every event this endpoint has not received in the chosen window."""
    endpoint = await scoped_endpoint(request)
    window = RECOVER_WINDOWS.get(str((await form_fields(request)).get("hours", "")))
    if window is None:
        return _page(request, endpoint, "recover_window")
    ctx: Context = request.app[CONTEXT]
    try:
        async with ctx.unit() as unit:
            since = now_ms() - window * 1000
            count, _ = await flow.recover(ctx, unit, endpoint, since)
    except EndpointDisabled:
        return _page(request, endpoint, "endpoint_disabled")
    return _page(request, endpoint, "recovering" if count else "nothing_to_recover")
