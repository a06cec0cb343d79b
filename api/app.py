"""The API application: its middleware and routes."""

from __future__ import annotations

from aiohttp import web

from api import dashboard, hub
from api.description import document, event_examples
from api.middleware import auth_failures, key_cache, rate_limit
from api.middleware.auth import acting_middleware, auth_middleware
from api.middleware.deadline import deadline_middleware
from api.middleware.errors import problem_middleware
from api.middleware.idempotency import idempotency_middleware
from api.middleware.metrics import metrics_middleware
from api.middleware.permissions import permission_middleware
from api.middleware.rate_limit import rate_limit_middleware
from api.middleware.tracing import tracing_middleware
from api.routes import ALL, checkout, ops, streams
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
    for declared in ALL:  # the checkout page under the path of SVC_CHECKOUT_BASE_URL
        app.add_routes(checkout.mounted(ctx) if declared is checkout.routes else declared)
    described = document(checkout.checkout_path(ctx))
    ops.serve(app, described)
    key_cache.install(app)
    auth_failures.install(app)
    streams.install(app)
    rate_limit.install(app)
    dashboard.install(app, ctx, event_examples.catalogue(described))
    hub.install(app)
    simulators.install(app)
    return app
