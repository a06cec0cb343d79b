"""API key routes: make a key (its secret is shown only then and when it is rolled), list and
read keys, roll a key's secret, revoke a key.

A caller's key may only make, roll or revoke keys with no more permissions than its own
(403 ``permission_denied`` naming the first it lacks); managing keys needs ``api_keys:write``.
Revoking the key that makes the request is allowed: the answer goes out before the key stops
working.
"""

from __future__ import annotations

from aiohttp import web

from api.input.api_keys import expire_previous_in, new_key
from api.input.fields import list_body, optional_json, page_params
from api.lookups import named
from api.middleware.auth import key_of, scope_of
from api.middleware.idempotency import idempotent
from api.openapi import (
    OPAQUE_CURSOR,
    created,
    json_content,
    ok,
    page_query,
    path_id,
    problem,
    ref,
)
from api.problems import NotFound, Problem
from api.routing import Routes
from svc.context import Context
from svc.db import Unit
from svc.http import CONTEXT, json_response
from svc.keys import flow
from svc.keys.model import ApiKey

routes = Routes("API keys", path_id("key_id", "key", "API key"))
_DENIED = problem(
    "permission_denied: the caller's key lacks api_keys:write, or makes, rolls or revokes a "
    "key with more permissions than its own; permission names what it lacks."
)

NOT_FOUND = "No API key {} in this scope."


@routes.post(
    "/v1/api_keys",
    "api_keys:write",
    {
        "operationId": "create_api_key",
        "summary": "Make an API key",
        "requestBody": {
            "required": False,
            "content": json_content(ref("ApiKeyCreate")),
        },
        "responses": {
            **created(
                "ApiKeyWithSecret",
                "The key, with its secret.",
                "/v1/api_keys/{id}.",
            ),
            "403": _DENIED,
        },
    },
)
async def create_key(request: web.Request) -> web.Response:
    """A new key of the caller's organisation and environment (201, with its ``secret``)."""
    new = new_key(await optional_json(request))

    async def create(unit: Unit) -> web.Response:
        secret, key = await flow.create(
            unit,
            scope_of(request),
            new.name,
            new.permissions,
            new.expires_ms,
            key_of(request).permissions,
        )
        headers = {"Location": f"/v1/api_keys/{key.id}"}
        return json_response({**key.public(), "secret": secret}, status=201, headers=headers)

    return await idempotent(request, create)


@routes.get(
    "/v1/api_keys",
    "api_keys:read",
    {
        "operationId": "list_api_keys",
        "summary": "List API keys",
        "parameters": page_query(OPAQUE_CURSOR),
        "responses": ok("ApiKeyList", "A page of keys."),
    },
    "422",
)
async def list_keys(request: web.Request) -> web.Response:
    limit, cursor = page_params(request)
    keys, next_cursor = await request.app[CONTEXT].api_keys.page(scope_of(request), limit, cursor)
    return json_response(list_body([key.public() for key in keys], next_cursor))


@routes.get(
    "/v1/api_keys/{key_id}",
    "api_keys:read",
    {
        "operationId": "read_api_key",
        "summary": "Read an API key",
        "responses": ok("ApiKey", "The key."),
    },
)
async def read_key(request: web.Request) -> web.Response:
    return json_response((await _scoped_key(request)).public())


@routes.post(
    "/v1/api_keys/{key_id}/roll",
    "api_keys:write",
    {
        "operationId": "roll_api_key",
        "summary": "Give an API key a new secret",
        "description": (
            "The old secret keeps working expire_previous_in seconds. "
            "A revoked key is 409 api_key_revoked."
        ),
        "requestBody": {
            "required": False,
            "content": json_content(ref("ApiKeyRoll")),
        },
        "responses": {
            **ok("ApiKeyWithSecret", "The key with its new secret."),
            "403": _DENIED,
        },
    },
)
async def roll_key(request: web.Request) -> web.Response:
    """A new secret (200, shown this once); the old one keeps working ``expire_previous_in``
    seconds (default 0: it stops now)."""
    key = await _scoped_key(request)
    seconds = expire_previous_in(await optional_json(request))
    ctx: Context = request.app[CONTEXT]

    async def roll(unit: Unit) -> web.Response:
        rolled = await flow.roll(
            unit,
            ctx.api_keys,
            ctx.key_changes,
            key.id,
            seconds,
            scope_of(request),
            key_of(request).permissions,
        )
        if rolled is None:
            raise Problem(409, "api_key_revoked", "A revoked key cannot be rolled.")
        secret, updated = rolled
        return json_response({**updated.public(), "secret": secret})

    return await idempotent(request, roll)


@routes.delete(
    "/v1/api_keys/{key_id}",
    "api_keys:write",
    {
        "operationId": "revoke_api_key",
        "summary": "Revoke an API key",
        "description": (
            "It stops working on every API process within a second; "
            "a key may revoke itself (this answer still goes out)."
        ),
        "responses": {**ok("ApiKey", "Revoked: revoked_at is set."), "403": _DENIED},
    },
)
async def revoke_key(request: web.Request) -> web.Response:
    """Revoke the key (200 with ``revoked_at``); it stops working on every API process."""
    key = await _scoped_key(request)
    ctx: Context = request.app[CONTEXT]

    async def revoke(unit: Unit) -> web.Response:
        revoked = await flow.revoke(
            unit,
            ctx.api_keys,
            ctx.key_changes,
            key.id,
            scope_of(request),
            key_of(request).permissions,
        )
        if revoked is None:
            raise NotFound("api_key_not_found", NOT_FOUND.format(key.id))
        return json_response(revoked.public())

    return await idempotent(request, revoke)


async def _scoped_key(request: web.Request) -> ApiKey:
    keys, scope = request.app[CONTEXT].api_keys, scope_of(request)
    return await named(
        request,
        "key_id",
        "key",
        lambda key_id: keys.get(key_id, scope),
        "api_key_not_found",
        NOT_FOUND,
    )
