"""The dashboard's home and its Developer page (the way to Webhooks and API keys)."""

from __future__ import annotations

from aiohttp import web

from api.dashboard.rendering import redirect, render

HOME = "/dashboard/payments"

routes = web.RouteTableDef()
root_routes = web.RouteTableDef()


@root_routes.get("/dashboard", allow_head=False)
async def root(request: web.Request) -> web.Response:
    return redirect(HOME)


@routes.get("/", allow_head=False)
async def index(request: web.Request) -> web.Response:
    return redirect(HOME)


@routes.get("/developer", allow_head=False)
async def developer(request: web.Request) -> web.Response:
    return render(request, "developer.html", section="developer")
