"""The dashboard: server-rendered pages under ``/dashboard`` for people, not part of the API.

Pages call the kernel's use cases directly (never the HTTP API) and page lists with the API's
cursors. Modules: ``sessions`` (server-side sessions, cookies), ``csrf`` (form tokens),
``guard`` (the middleware), ``rendering`` (templates, headers), and one module of views per
area: ``signin``, ``home``, ``webhook_views``, ``endpoint_actions``, ``delivery_views``,
``key_views``, ``notification_views``, ``event_views``, ``payment_views``,
``terminal_views``. ``reference`` serves the interactive API reference at ``/docs`` and
``problems`` the page a Problem's ``type`` leads to at ``/problems``, both outside the
dashboard's prefix; ``portal`` serves the webhook views again at ``/portal`` for a platform's
iframe; ``endpoint_edit`` edits an endpoint.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from api.dashboard import (
    delivery_views,
    endpoint_actions,
    endpoint_edit,
    event_views,
    home,
    key_views,
    notification_views,
    payment_views,
    portal,
    problems,
    reference,
    signin,
    terminal_views,
    webhook_views,
)
from api.dashboard.guard import SESSIONS, guard
from api.dashboard.rendering import ROOT, STATIC_DIR, TEMPLATES, environment
from api.dashboard.sessions import Sessions
from svc.context import Context
from svc.http import CONTEXT

PREFIX = "/dashboard"
PAGES = (reference.PATH, problems.PATH, home.FAVICON_PATH, portal.PREFIX)
"""What is served for people outside ``PREFIX`` (each path and those under it): the API
reference, the page of Problem types, the favicon and the portal; none of it is part of the
API."""


def build(ctx: Context) -> web.Application:
    """The dashboard as a sub-application, to be mounted at ``PREFIX``."""
    app = web.Application(middlewares=[guard])
    app[CONTEXT] = ctx
    app[TEMPLATES] = environment()
    app[ROOT] = PREFIX
    settings = ctx.settings
    app[SESSIONS] = Sessions(
        ctx.redis, ctx.keys, settings.dashboard_session_ttl, settings.dashboard_session_max_age
    )
    views = (
        home,
        signin,
        webhook_views,
        endpoint_actions,
        endpoint_edit,
        delivery_views,
        key_views,
        notification_views,
    )
    for module in (*views, event_views, payment_views, terminal_views):
        app.add_routes(module.routes)
    app.router.add_static("/static/", STATIC_DIR, name="static")
    return app


def install(app: web.Application, ctx: Context, catalogue: list[dict[str, Any]]) -> None:
    """Mount the dashboard on the API's app, the API reference page beside it, and the portal
    (which shows ``catalogue``, each event type with its schema and an example)."""
    app.add_routes(home.root_routes)
    app.add_routes(reference.routes())
    app.add_routes(problems.routes())
    app.add_subapp(PREFIX, build(ctx))
    app.add_subapp(portal.PREFIX, portal.build(ctx, catalogue))
