"""The permission a ``/v1`` route needs, named by its declaration (``api.routing``), checked
before the route runs.

A key without permissions has full access; a restricted key without the route's permission
is answered 403 ``permission_denied`` naming it (``write`` implies ``read``). The OpenAPI
document lists the same permission in each operation's ``security``, and a test holds every
route of the app to a declaration, so a new route cannot ship unguarded: a route without one
is for full-access keys only.
"""

from __future__ import annotations

from aiohttp import web

from api.middleware.auth import API_KEY
from api.problems import Handler, Problem
from api.routing import declared
from svc.keys.model import FULL_ACCESS, allows


@web.middleware
async def permission_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    key = request.get(API_KEY)
    if key is None or key.permissions is None or request.match_info.route.resource is None:
        return await handler(request)
    route = declared(request)
    permission = None if route is None else route.permission
    if permission is None and request.match_info.http_exception is None:
        permission = FULL_ACCESS  # a route declaring no permission: no restricted key's
    if permission is not None and not allows(key.permissions, permission):
        raise denied(permission)
    return await handler(request)


def denied(permission: str, why: str = "") -> Problem:
    """The 403 ``permission_denied`` of a key that lacks ``permission`` (``why`` ends the
    detail)."""
    detail = f"This API key lacks the permission {permission}{why}."
    return Problem(403, "permission_denied", detail, members={"permission": permission})
