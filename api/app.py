"""The API application: its middleware and routes."""

from __future__ import annotations

from aiohttp import web

from api import dashboard, hub
from api.description import document
from api.middleware import auth_failures, key_cache, rate_limit
from api.middleware.auth import acting_middleware, auth_middleware
from api.middleware.deadline import deadline_middleware
from api.middleware.errors import problem_middleware
from api.middleware.idempotency import idempotency_middleware
from api.middleware.metrics import metrics_middleware
from api.middleware.permissions import permission_middleware
from api.middleware.rate_limit import rate_limit_middleware
from api.middleware.tracing import tracing_middleware
from api.routes import (
    ALL,
    api_keys,
    balance,
    chargebacks,
    checkout,
    endpoint_operations,
    events,
    ops,
    organisations,
    payments,
    payouts,
    refunds,
    streams,
    terminal_ws,
    terminals,
    webhooks,
)
from api.routing import DECLARED, table
from api.sandbox import simulators
from svc.context import Context
from svc.http import CONTEXT

MAX_BODY = 64 * 1024


def build_app(ctx: Context) -> web.Application:
    app = web.Application(
        client_max_size=MAX_BODY,
        middlewares=[
            tracing_middleware,
            metrics_middleware,
            problem_middleware,
            deadline_middleware,
            auth_middleware,
            rate_limit_middleware,
            permission_middleware,
            idempotency_middleware,
            acting_middleware,
        ],
    )
    app[CONTEXT] = ctx
    app[DECLARED] = table(ALL)
    app.add_routes(ops.routes(document(checkout.checkout_path(ctx))))
    app.add_routes(webhooks.routes)
    app.add_routes(endpoint_operations.routes)
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
    app.add_routes(api_keys.routes)
    app.add_routes(checkout.routes(ctx))
    key_cache.install(app)
    auth_failures.install(app)
    streams.install(app)
    rate_limit.install(app)
    dashboard.install(app, ctx)
    hub.install(app)
    simulators.install(app)
    return app
