"""The ``Idempotency-Key`` header: required where a route's declaration says so (the POSTs
that create payments or move money), honoured on every POST.

The middleware checks the header and fingerprints the request; handlers run their state
change through ``idempotent``, which makes the key a step of the use case's unit of work
(``svc.idempotency``): the first 2xx response commits with the change and is replayed
with ``Idempotent-Replayed: true``. A request that fails stores nothing, so the client may
retry with the key. Requests are "the same" when method, path with query, content type
and body bytes are the same; keys are kept ``SVC_IDEMPOTENCY_TTL`` (24 h) per
organisation, environment, API key and key.

Each API key has keys of its own: another API key of the organisation that sends the same
``Idempotency-Key`` makes a new request (the route's use case runs for it, with its
permissions), never a replay of the first key's answer. A replay is refused 403
``permission_denied`` when the key has lost a permission it had when the answer was stored.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError

from api.middleware.auth import key_of, scope_of
from api.middleware.permissions import denied
from api.problems import FieldError, Handler, Problem
from api.routing import declared
from svc.db import Unit
from svc.errors import RequestInProgress
from svc.http import CONTEXT
from svc.idempotency import Stored, fingerprint, taken
from svc.keys.errors import PermissionsExceeded
from svc.keys.model import ApiKey
from svc.orgs import Scope

HEADER = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"
MAX_KEY_LENGTH = 255


@dataclass(frozen=True, slots=True)
class KeyedRequest:
    key: str
    fingerprint: str


KEYED = web.RequestKey("idempotency", KeyedRequest)


def key_error(code: str, status: int, detail: str, field_code: str) -> Problem:
    return Problem(status, code, detail, [FieldError(HEADER, field_code, detail)])


def _check_key(key: str) -> None:
    if not 1 <= len(key) <= MAX_KEY_LENGTH or not all(" " <= c <= "~" for c in key):
        raise key_error(
            "idempotency_key_invalid",
            400,
            f"{HEADER} must be 1 to {MAX_KEY_LENGTH} printable ASCII characters.",
            "invalid",
        )


@web.middleware
async def idempotency_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.method != "POST" or request.match_info.http_exception is not None:
        return await handler(request)
    resource = request.match_info.route.resource
    template = resource.canonical if resource is not None else ""
    if not template.startswith("/v1/"):
        return await handler(request)
    key = request.headers.get(HEADER)
    if key is None:
        route = declared(request)
        if route is not None and route.key_required:
            raise key_error(
                "idempotency_key_missing",
                400,
                f"Send an {HEADER} header: it makes retrying this request safe.",
                "required",
            )
        return await handler(request)
    _check_key(key)
    try:
        body = await request.read()
    except RequestPayloadError:  # a body its Content-Encoding does not decode
        raise Problem(400, "bad_request", "The request body cannot be decoded.") from None
    fp = fingerprint(request.method, request.path_qs, request.content_type, body)
    request[KEYED] = KeyedRequest(key, fp)
    return await handler(request)


async def idempotent(
    request: web.Request, change: Callable[[Unit], Awaitable[web.Response]]
) -> web.Response:
    """Run ``change`` in one unit of work with the request's idempotency key, if any.

    The change runs first and its 2xx response commits with it as the key's record; a key
    that already has one (``taken``), or a change that fails, sends the request to the
    stored response: replayed when there is one, else the change's own answer. A retry
    thus costs the work it rolls back, and a first request no look-up at all."""
    ctx = request.app[CONTEXT]
    keyed = request.get(KEYED)
    if keyed is None:
        async with ctx.unit() as unit:
            return await change(unit)
    scope, caller = scope_of(request), key_of(request)
    try:
        async with ctx.unit() as unit:
            response = await change(unit)
            if 200 <= response.status < 300 and isinstance(response.body, bytes):
                content_type = response.headers.get("Content-Type", "application/json")
                kept = Stored(response.status, response.body, content_type)
                await ctx.idempotency.remember(
                    unit, scope, caller, keyed.key, keyed.fingerprint, kept
                )
                return response
    except Exception as exc:
        stored = await _stored(request, scope, caller, keyed)
        if stored is not None:
            return _replay(stored)
        if taken(exc):  # its record went between the claim and the look-up: try again
            raise RequestInProgress(keyed.key) from None
        raise
    stored = await _stored(request, scope, caller, keyed)  # a failure answered, not raised
    return response if stored is None else _replay(stored)


async def _stored(
    request: web.Request, scope: Scope, caller: ApiKey, keyed: KeyedRequest
) -> Stored | None:
    with _narrowed():
        return await request.app[CONTEXT].idempotency.find(
            scope, caller, keyed.key, keyed.fingerprint
        )


def _replay(stored: Stored) -> web.Response:
    return web.Response(
        status=stored.status,
        body=stored.body,
        headers={"Content-Type": stored.content_type, REPLAYED: "true"},
    )


@contextmanager
def _narrowed() -> Iterator[None]:
    """A stored answer the key's permissions no longer cover: a 403 naming what it lacks."""
    try:
        yield
    except PermissionsExceeded as exc:
        why = f", which it had when the answer to this {HEADER} was stored"
        raise denied(exc.permission, why) from None
