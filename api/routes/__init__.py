"""Route modules, one per resource of the API, each declaring its routes once
(``api.routing``); the schemas of their objects are in ``api.description``."""

from __future__ import annotations

from api.routes import (
    api_keys,
    balance,
    chargebacks,
    checkout,
    endpoint_operations,
    events,
    notifications,
    ops,
    organisations,
    payments,
    payouts,
    portal_sessions,
    refunds,
    streams,
    terminal_ws,
    terminals,
    webhooks,
)
from api.routing import Routes

ALL: tuple[Routes, ...] = (
    ops.routes,
    webhooks.routes,
    endpoint_operations.routes,
    notifications.routes,
    events.routes,
    payments.routes,
    terminals.routes,
    streams.routes,
    terminal_ws.routes,
    checkout.routes,
    refunds.routes,
    chargebacks.routes,
    balance.routes,
    payouts.routes,
    organisations.routes,
    api_keys.routes,
    portal_sessions.routes,
)
"""The declared routes, module by module in the order of the OpenAPI document."""


def permissions() -> dict[tuple[str, str], str]:
    """The permission each declared route needs, by (method, route template)."""
    return {
        (route.method, route.path): route.permission
        for routes in ALL
        for route in routes.declared
        if route.permission is not None
    }
