"""Bearer API keys on every ``/v1`` route; the resolved scope rides on the request."""

from __future__ import annotations

from aiohttp import web

from api.errors import Handler, Unauthorized
from svc.http import CONTEXT
from svc.orgs import Scope

SCOPE = web.RequestKey("scope", Scope)


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.path.startswith("/v1/"):
        request[SCOPE] = await _authenticate(request)
    return await handler(request)


async def _authenticate(request: web.Request) -> Scope:
    header = request.headers.get("Authorization")
    if not header:
        raise Unauthorized("missing_api_key", "Send the header Authorization: Bearer <API key>.")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise Unauthorized(
            "invalid_authorization", "The Authorization header must be 'Bearer <API key>'."
        )
    scope = await request.app[CONTEXT].api_keys.resolve(key.strip())
    if scope is None:
        raise Unauthorized("invalid_api_key", "The API key is not valid.")
    return scope


def scope_of(request: web.Request) -> Scope:
    return request[SCOPE]
