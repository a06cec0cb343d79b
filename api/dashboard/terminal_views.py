"""Terminals: every terminal of the scope with its status, online or offline."""

from __future__ import annotations

from aiohttp import web

from api.dashboard.rendering import render
from api.middleware.auth import scope_of
from api.routes.terminals import ensure_simulator
from svc.http import CONTEXT

routes = web.RouteTableDef()


@routes.get("/terminals", allow_head=False)
async def list_terminals(request: web.Request) -> web.Response:
    """Like ``GET /v1/terminals``: a test scope gets its simulation terminal on first look."""
    scope = scope_of(request)
    await ensure_simulator(request, scope)
    terminals = await request.app[CONTEXT].terminals.in_scope(scope)
    return render(request, "terminals.html", section="terminals", terminals=terminals)
