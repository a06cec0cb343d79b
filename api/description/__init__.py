"""The OpenAPI 3.1.0 description of the API: its paths derived from the route declarations, its
schemas from one module per resource."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from types import ModuleType

from api.description import (
    api_keys,
    balance,
    chargebacks,
    checkout,
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
    webhook_events,
    webhooks,
)
from api.description.shapes import problem_responses, problem_schemas
from api.openapi import Json, v1, v1_post
from api.routes import ALL
from api.routing import Route

SCHEMAS: tuple[ModuleType, ...] = (
    ops,
    webhooks,
    notifications,
    events,
    payments,
    terminals,
    streams,
    terminal_ws,
    checkout,
    refunds,
    chargebacks,
    balance,
    payouts,
    organisations,
    api_keys,
    portal_sessions,
)
"""The modules giving the document's schemas, in its order (endpoint_operations is included by
webhooks); webhook_events gives the webhooks and their schemas. The paths are derived from the
route declarations (``api.routes.ALL``)."""
DEFAULT_CHECKOUT_PATH = "/checkout"

TAGS: dict[str, str] = {
    "Operations": "Liveness and this document, without credentials.",
    "Webhook endpoints": (
        "The URLs events are sent to: subscribe, pause, rotate the signing secret, recover, "
        "test, and read an endpoint's delivery attempts."
    ),
    "Notifications": (
        "Where email notices about the endpoints go (failing, disabled, retries exhausted)."
    ),
    "Events": "Every event of the scope, its deliveries, and resending it.",
    "Payments": "Create, read, list and cancel payments (online checkout or terminal).",
    "Terminals": "The scope's payment terminals, and starting a payment on one.",
    "WebSockets": (
        "Live streams: a payment's status changes, and the terminal device's own connection."
    ),
    "Checkout": "The customer's payment page; its token in the path is the credential.",
    "Refunds and chargebacks": "Refunds of succeeded payments and (sandbox) chargebacks.",
    "Balance and payouts": "The balance, its transactions, and payouts to the bank account.",
    "Partners": "A partner's connected organisations and its earnings.",
    "API keys": "The organisation's API keys: create, read, roll and revoke, with permissions.",
    "Portal": "One-time links to the embeddable portal, for a platform's organisations.",
}
"""Each tag, in the order of the document, and what its operations are about."""
SERVERS: list[Json] = [
    {
        "url": "/",
        "description": (
            "The service that serves this document: paths are relative to its address "
            "(http://127.0.0.1:8080 under make run)."
        ),
    }
]

INFO: Json = {
    "title": "svc payment service API",
    "version": "1.0.0",
    "summary": "Payments, terminals, signed webhook events, refunds, payouts and partners.",
    "description": (
        "Paths under /v1 take `Authorization: Bearer <API key>` (svc_test_... for the "
        "sandbox, svc_live_... for production); a key sees only its organisation and "
        "environment. Every error is an RFC 9457 Problem (`application/problem+json`) "
        "with a stable `code`; input errors list each offending field in `errors`."
    ),
    "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
}


def _schemas() -> Json:
    merged = {**problem_schemas(), **webhook_events.schemas()}
    for module in SCHEMAS:
        for name, value in module.schemas().items():
            if name in merged:
                raise ValueError(f"{name} is described twice")
            merged[name] = value
    return merged


def document(checkout_path: str = DEFAULT_CHECKOUT_PATH) -> Json:
    """The whole description as a JSON-ready dict; the checkout page lives under
    ``checkout_path``, the path of ``SVC_CHECKOUT_BASE_URL``."""
    return {
        "openapi": "3.1.0",
        "info": INFO,
        "servers": SERVERS,
        "tags": [
            {"name": tag, "description": TAGS[tag]}
            for tag in dict.fromkeys(routes.tag for routes in ALL)
        ],
        "paths": _paths((route for routes in ALL for route in routes.declared), checkout_path),
        "webhooks": webhook_events.webhooks(),
        "components": {
            "schemas": _schemas(),
            "responses": problem_responses(),
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": (
                        "An API key: svc_test_... or svc_live_.... An operation's security "
                        "names the permission a restricted key needs for it (write implies "
                        "read; a key without permissions has full access); without it the "
                        "answer is 403 permission_denied. Each key may send "
                        "SVC_RATE_LIMIT_LIVE (or _TEST) requests a second; beyond, 429 "
                        "rate_limited with Retry-After. A client address that sent more than "
                        "SVC_FAILED_AUTH_LIMIT requests with an unknown key within "
                        "SVC_FAILED_AUTH_WINDOW gets 429 too_many_failed_auth with "
                        "Retry-After until the window ends."
                    ),
                },
                "terminal": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A terminal's device secret: trmsec_....",
                },
            },
        },
    }


def _paths(routes: Iterable[Route], checkout_path: str) -> Json:
    """The paths of the declared routes, each operation derived from its declaration; the
    checkout page's under ``checkout_path``."""
    paths: Json = {}
    for route in routes:
        path = route.path
        if path.startswith(DEFAULT_CHECKOUT_PATH + "/"):
            path = checkout_path + path.removeprefix(DEFAULT_CHECKOUT_PATH)
        item = paths.setdefault(path, {})
        if route.path_parameters:
            item["parameters"] = list(route.path_parameters)
        item[route.method.lower()] = _operation(route)
    return paths


def _operation(route: Route) -> Json:
    """A route's operation: as declared, with its tag; under /v1 the shared parameters and
    Problem responses (and Idempotency-Key on a POST), and the permission as its security."""
    operation: Json = {"tags": [route.tag], **copy.deepcopy(route.operation)}
    if not route.path.startswith("/v1/"):
        return operation
    if route.method == "POST":
        operation = v1_post(operation, *route.problems, key_required=route.key_required)
    else:
        operation = v1(operation, *route.problems)
    if route.permission is None:
        raise ValueError(f"{route.method} {route.path} under /v1 names no permission")
    return {**operation, "security": [{"bearer": [route.permission]}]}
