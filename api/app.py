"""The API application: middlewares, routes, and request metrics."""

from __future__ import annotations

import time

from aiohttp import web

from api import (
    balance,
    chargebacks,
    checkout,
    dashboard,
    events,
    hub,
    organisations,
    payments,
    payouts,
    refunds,
    simulators,
    streams,
    terminal_ws,
    terminals,
    webhooks,
)
from api.auth import acting_middleware, auth_middleware
from api.errors import Handler, problem_middleware
from api.idempotency import idempotency_middleware
from api.openapi import openapi_route
from api.tracing import tracing_middleware
from svc.context import Context
from svc.http import CONTEXT, ops_routes

MAX_BODY = 64 * 1024


@web.middleware
async def metrics_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Count and time requests by route template (never the raw path, which holds ids)."""
    started = time.perf_counter()
    status = 500
    try:
        response = await handler(request)
        status = response.status
        return response
    finally:
        resource = request.match_info.route.resource
        route = resource.canonical if resource is not None else "unmatched"
        metrics = request.app[CONTEXT].metrics
        metrics.http_requests.labels(route, request.method, str(status)).inc()
        metrics.http_duration.labels(route).observe(time.perf_counter() - started)


def build_app(ctx: Context) -> web.Application:
    app = web.Application(
        client_max_size=MAX_BODY,
        middlewares=[
            tracing_middleware,
            metrics_middleware,
            problem_middleware,
            auth_middleware,
            idempotency_middleware,
            acting_middleware,
        ],
    )
    app[CONTEXT] = ctx
    app.add_routes(ops_routes())
    app.add_routes([openapi_route(ctx)])
    app.add_routes(webhooks.routes)
    app.add_routes(events.routes)
    app.add_routes(payments.routes)
    app.add_routes(streams.routes)
    app.add_routes(terminals.routes)
    app.add_routes(terminal_ws.routes)
    app.add_routes(refunds.routes)
    app.add_routes(chargebacks.routes)
    app.add_routes(balance.routes)
    app.add_routes(payouts.routes)
    app.add_routes(organisations.routes)
    app.add_routes(checkout.routes(ctx))
    dashboard.install(app, ctx)
    hub.install(app)
    simulators.install(app)
    return app
