"""The permission each ``/v1`` route needs, in one table, checked before the route runs.

A key without permissions has full access; a restricted key without the route's permission
is answered 403 ``permission_denied`` naming it (``write`` implies ``read``). The OpenAPI
document lists the same permission in each operation's ``security``, and a test holds every
route of the app to this table, so a new route cannot ship unguarded.
"""

from __future__ import annotations

from aiohttp import web

from api.middleware.auth import API_KEY
from api.problems import Handler, Problem
from api.routing import declared
from svc.orgs.permissions import FULL_ACCESS, allows

_ENDPOINT = "/v1/webhook_endpoints/{endpoint_id}"

PERMISSIONS: dict[tuple[str, str], str] = {}
"""(method, route template) → the permission a key needs for it."""

PUBLIC = (
    "/health",
    "/openapi.json",
    "/docs",
    "/docs/static/{name}",
    "/problems",
    "/problems/{code}",
    "/favicon.ico",
    "/checkout/{payment_id}/{token}",
    "/terminal/v1/connect",
)
"""Routes outside ``/v1`` that take no API key: liveness, the OpenAPI document and its
reference page, the page of Problem types and the favicon, the customer's checkout page (its
token is the credential) and the device WebSocket (the terminal's own secret is)."""


def needed(method: str, route: str) -> str | None:
    """The permission a request to ``route`` (a template) needs; None outside ``/v1``."""
    return PERMISSIONS.get(("GET" if method == "HEAD" else method, route))


@web.middleware
async def permission_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    key = request.get(API_KEY)
    resource = request.match_info.route.resource
    if key is None or key.permissions is None or resource is None:
        return await handler(request)
    route = declared(request)
    permission = (
        route.permission if route is not None else needed(request.method, resource.canonical)
    )
    if permission is None and request.match_info.http_exception is None:
        permission = FULL_ACCESS  # a /v1 route missing from the table: no restricted key's
    if permission is not None and not allows(key.permissions, permission):
        raise denied(permission)
    return await handler(request)


def denied(permission: str, why: str = "") -> Problem:
    """The 403 ``permission_denied`` of a key that lacks ``permission`` (``why`` ends the
    detail)."""
    detail = f"This API key lacks the permission {permission}{why}."
    return Problem(403, "permission_denied", detail, members={"permission": permission})
