"""The dashboard's home and its Developer page (the way to Webhooks and API keys)."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from api.dashboard.rendering import redirect, render

HOME = "/dashboard/payments"
FAVICON_PATH = "/favicon.ico"
FAVICON = Path(__file__).parent / "static" / "favicon.ico"

routes = web.RouteTableDef()
root_routes = web.RouteTableDef()


@root_routes.get("/dashboard", allow_head=False)
async def root(request: web.Request) -> web.Response:
    return redirect(HOME)


@root_routes.get(FAVICON_PATH, allow_head=False)
async def favicon(request: web.Request) -> web.FileResponse:
    """The icon browsers ask every site for, so no page of the service logs a 404 for it."""
    return web.FileResponse(FAVICON, headers={"Cache-Control": "public, max-age=86400"})


@routes.get("/", allow_head=False)
async def index(request: web.Request) -> web.Response:
    return redirect(HOME)


@routes.get("/developer", allow_head=False)
async def developer(request: web.Request) -> web.Response:
    return render(request, "developer.html", section="developer")
