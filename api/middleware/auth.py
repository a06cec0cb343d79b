"""Bearer API keys on every ``/v1`` route; the key and its scope ride on the request.

Keys are resolved through this process's cache (``api.middleware.key_cache``): a revoked,
expired or rolled-away secret is a 401 ``invalid_api_key`` like an unknown one. Such requests
count against their client address, which beyond its limit gets 429 ``too_many_failed_auth``
before its keys are looked up (``api.middleware.auth_failures``).

A partner's key with ``Svc-Organisation: org_…`` acts for that connected organisation, in the
key's environment. Any other value (an unknown id, another partner's organisation, the
header on a key that is not a partner's) is a 404 ``organisation_not_found``, so no
organisation's data is ever reached through another's key.
"""

from __future__ import annotations

import re

from aiohttp import web

from api.middleware.auth_failures import FAILED_AUTH
from api.middleware.key_cache import KEY_CACHE
from api.problems import Handler, NotFound, Unauthorized
from svc.http import CONTEXT
from svc.ids import has_prefix
from svc.keys.model import KEY_PREFIXES, ApiKey
from svc.orgs import Scope

SCOPE = web.RequestKey("scope", Scope)
API_KEY = web.RequestKey("api_key", ApiKey)
ORGANISATION_HEADER = "Svc-Organisation"
KEY_TAIL = 32
"""Characters after a key's prefix (``svc.ids.new_secret`` of 24 bytes, URL-safe base64)."""
KEY_SHAPE = re.compile(
    "(?:" + "|".join(re.escape(p) for p in KEY_PREFIXES.values()) + f")[A-Za-z0-9_-]{{{KEY_TAIL}}}"
)
SECRETS_OF_OTHERS = {
    "whsec_": "a webhook endpoint's signing secret",
    "trmsec_": "a terminal's device secret",
}


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.path.startswith("/v1/"):
        key = await _authenticate(request)
        request[API_KEY] = key
        request[SCOPE] = key.scope
    return await handler(request)


async def _authenticate(request: web.Request) -> ApiKey:
    header = request.headers.get("Authorization")
    if not header:
        raise Unauthorized("missing_api_key", "Send the header Authorization: Bearer <API key>.")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise Unauthorized(
            "invalid_authorization", "The Authorization header must be 'Bearer <API key>'."
        )
    secret, cache, failures = key.strip(), request.app[KEY_CACHE], request.app[FAILED_AUTH]
    address = failures.address(request)
    if not cache.known(secret):
        await failures.check(address)
    found = await cache.authenticate(secret)
    if found is None:
        await failures.failed(address)
        raise Unauthorized("invalid_api_key", _not_valid(secret))
    return found.key


def _not_valid(secret: str) -> str:
    """Why a key was refused; a key of the wrong shape is told what a key looks like (never
    echoing what was sent)."""
    if KEY_SHAPE.fullmatch(secret):
        return "The API key is not valid: unknown, revoked, rolled or expired."
    shape = (
        "An API key is svc_test_ (test) or svc_live_ (live) followed by "
        f"{KEY_TAIL} letters, digits, - or _, as svc keys create prints it."
    )
    for prefix, what in SECRETS_OF_OTHERS.items():
        if secret.startswith(prefix):
            return f"This is {what}, not an API key. {shape}"
    return f"This is not an API key. {shape}"


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
    orgs = request.app[CONTEXT].orgs
    if has_prefix(org_id, "org") and await orgs.is_connected(partner.org, org_id):
        return Scope(org_id, partner.env)
    raise NotFound(
        "organisation_not_found",
        f"{ORGANISATION_HEADER} names no organisation connected to this key's organisation.",
    )


def scope_of(request: web.Request) -> Scope:
    return request[SCOPE]


def key_of(request: web.Request) -> ApiKey:
    """The API key the request was sent with (its scope may differ: see ``scope_of``)."""
    return request[API_KEY]
