"""The embeddable portal at ``/portal``: the dashboard's webhook pages (endpoints, their
health, delivery log, resend and recover, events, notification addresses) and a catalogue of
event types, for one organisation and environment, in a platform's iframe.

A platform's backend makes a one-time link (``POST /v1/portal_sessions``); opening it
redeems it and sets the session's cookie, and a second opening is refused. Every page of the
session is served with the dashboard's headers and CSRF rule, except that its
Content-Security-Policy lets the session's ``frame_origin`` (and no other page) frame it;
without a frame origin, no page may. The portal shows no API key, no payment, balance or
payout page and no other scope: it serves the webhook and event views alone.

The cookie has to reach the portal inside a third-party iframe. Over https it is
``SameSite=None; Secure; Partitioned`` (partitioned by the framing site, so browsers that
block third-party cookies keep it too). Over plain http to this machine, which the
``Secure`` rule allows only with ``SVC_DASHBOARD_SECURE_COOKIES`` false, browsers refuse
``SameSite=None`` without ``Secure``: there it is ``SameSite=Lax``, which a frame of the same
site (another port of 127.0.0.1 or localhost, as in development and the tests) still sends.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from api.dashboard import (
    csrf,
    delivery_views,
    endpoint_actions,
    endpoint_edit,
    event_views,
    notification_views,
    webhook_views,
)
from api.dashboard.guard import answered, error_page
from api.dashboard.rendering import (
    CSP,
    PORTAL,
    ROOT,
    SECURITY_HEADERS,
    STATIC_DIR,
    TEMPLATES,
    environment,
    page_url,
    redirect,
    render,
)
from api.dashboard.sessions import cookie_secure
from api.middleware.auth import SCOPE
from api.problems import Handler
from svc.context import Context
from svc.http import CONTEXT
from svc.portal import flow
from svc.portal.model import SESSION_TTL

PREFIX = "/portal"
COOKIE = "svc_portal"
OPEN = "/open/"
STATIC = f"{PREFIX}/static/"
REFUSED = (
    "This portal link was opened before or has expired: each link opens once. "
    "Open the portal again from the platform."
)
ENDED = "This portal session has ended. Open the portal again from the platform."

CATALOGUE = web.AppKey("portal_catalogue", list[dict[str, Any]])

routes = web.RouteTableDef()


FRAMED_BY = web.RequestKey("portal_frame_origin", str)
"""The one origin that may frame the answer: its session's, or the refused link's."""


def headers(origin: str | None) -> dict[str, str]:
    """The dashboard's security headers, with ``frame-ancestors`` ``origin`` (or 'none')."""
    if origin is None:
        return SECURITY_HEADERS
    found = {**SECURITY_HEADERS, "Content-Security-Policy": _framed_by(origin)}
    del found["X-Frame-Options"]  # it can only deny or allow the same origin
    return found


def _framed_by(origin: str) -> str:
    return CSP.replace("frame-ancestors 'none'", f"frame-ancestors {origin}")


@web.middleware
async def portal_guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    response = await answered(request, _guarded(request, handler))
    response.headers.update(headers(request.get(FRAMED_BY)))
    if not request.path.startswith(STATIC):
        response.headers["Cache-Control"] = "no-store"
    return response


async def _guarded(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.path.startswith((STATIC, PREFIX + OPEN)):
        return await handler(request)
    cookie = request.cookies.get(COOKIE, "")
    ctx: Context = request.app[CONTEXT]
    session = await ctx.portal.load(cookie) if 20 <= len(cookie) <= 100 else None
    if session is None:
        return error_page(request, 401, ENDED)
    request[PORTAL] = session
    _frame(request, session.frame_origin)
    request[SCOPE] = session.scope
    if request.method == "POST":
        await csrf.verify(request, session.csrf)
    return await handler(request)


def _frame(request: web.Request, origin: str | None) -> None:
    if origin is not None:
        request[FRAMED_BY] = origin


@routes.get(OPEN + "{token}", allow_head=False)
async def open_portal(request: web.Request) -> web.Response:
    """Redeem the link and go to the endpoints; a link used or expired is a refusal page."""
    token = request.match_info["token"]
    if not 20 <= len(token) <= 100:
        return error_page(request, 403, REFUSED)
    ctx: Context = request.app[CONTEXT]
    started = await flow.start(ctx, token)
    if started is None:
        _frame(request, await ctx.portal.frame_origin(token))
        return error_page(request, 403, REFUSED)
    cookie, session = started
    request[PORTAL] = session
    _frame(request, session.frame_origin)
    response = redirect(page_url(request, "/webhooks"))
    secure = cookie_secure(request, ctx.settings.dashboard_secure_cookies)
    response.set_cookie(
        COOKIE,
        cookie,
        path=PREFIX,
        max_age=SESSION_TTL,
        httponly=True,
        secure=secure,
        samesite="None" if secure else "Lax",
        partitioned=secure or None,
    )
    return response


@routes.get("/", allow_head=False)
async def index(request: web.Request) -> web.Response:
    return redirect(page_url(request, "/webhooks"))


@routes.get("/catalogue", allow_head=False)
async def event_catalogue(request: web.Request) -> web.Response:
    """Every event type an endpoint may subscribe to, its ``data`` schema and an example."""
    return render(request, "portal_catalogue.html", event_types=request.app[CATALOGUE])


@routes.get("/brand.css", allow_head=False)
async def brand(request: web.Request) -> web.Response:
    """The platform's accent colour (a style sheet of its own: the CSP allows no inline style)."""
    accent = request[PORTAL].branding.accent_color
    text = f":root {{ --accent: {accent}; }}\n" if accent else ""
    return web.Response(text=text, content_type="text/css")


def build(ctx: Context, catalogue: list[dict[str, Any]]) -> web.Application:
    """The portal as a sub-application, to be mounted at ``PREFIX``; ``catalogue`` is each
    event type with its ``summary``, ``schema`` and ``example`` (from the API's description)."""
    app = web.Application(middlewares=[portal_guard])
    app[CONTEXT] = ctx
    app[CATALOGUE] = catalogue
    app[TEMPLATES] = environment()
    app[ROOT] = PREFIX
    app.add_routes(routes)
    views = (webhook_views, endpoint_actions, endpoint_edit, delivery_views, event_views)
    for module in (*views, notification_views):
        app.add_routes(module.routes)
    app.router.add_static("/static/", STATIC_DIR, name="static")
    return app
