"""Terminals: every terminal of the scope with its status, online or offline."""

from __future__ import annotations

from aiohttp import web

from api.dashboard.rendering import render
from api.hub import HUB
from api.middleware.auth import scope_of
from api.sandbox.simulators import ensure_simulator
from svc.http import CONTEXT

routes = web.RouteTableDef()


@routes.get("/terminals", allow_head=False)
async def list_terminals(request: web.Request) -> web.Response:
    """Like ``GET /v1/terminals``: a test scope gets its simulation terminal on first look."""
    scope = scope_of(request)
    # config_dict: the hub belongs to the API's app, of which the dashboard is a sub-app.
    await ensure_simulator(request.app[CONTEXT], request.config_dict[HUB], scope)
    terminals = await request.app[CONTEXT].terminals.in_scope(scope)
    return render(request, "terminals.html", section="terminals", terminals=terminals)
