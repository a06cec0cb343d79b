"""Bearer API keys on every ``/v1`` route; the resolved scope rides on the request.

A partner's key with ``Svc-Organisation: org_…`` acts for that connected organisation, in the
key's environment. Any other value (an unknown id, another partner's organisation, the
header on a key that is not a partner's) is a 404 ``organisation_not_found``, so no
organisation's data is ever reached through another's key.
"""

from __future__ import annotations

from aiohttp import web

from api.problems import Handler, NotFound, Unauthorized
from svc.http import CONTEXT
from svc.ids import has_prefix
from svc.money import partners
from svc.orgs import Scope

SCOPE = web.RequestKey("scope", Scope)
ORGANISATION_HEADER = "Svc-Organisation"


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


@web.middleware
async def acting_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A partner's key acting for a connected organisation: after the key and the request's
    own checks (an unknown route or method, a missing ``Idempotency-Key``) have answered."""
    acting_for = request.headers.get(ORGANISATION_HEADER)
    matched = request.match_info.http_exception is None
    if acting_for is not None and matched and request.path.startswith("/v1/"):
        request[SCOPE] = await _connected(request, request[SCOPE], acting_for)
    return await handler(request)


async def _connected(request: web.Request, partner: Scope, org_id: str) -> Scope:
    """The scope of ``org_id`` when it is connected to the key's (partner) organisation."""
    db = request.app[CONTEXT].db
    if has_prefix(org_id, "org") and await partners.is_connected(db, partner.org, org_id):
        return Scope(org_id, partner.env)
    raise NotFound(
        "organisation_not_found",
        f"{ORGANISATION_HEADER} names no organisation connected to this key's organisation.",
    )


def scope_of(request: web.Request) -> Scope:
    return request[SCOPE]
