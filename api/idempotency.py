"""The ``Idempotency-Key`` middleware: required on payment creation, honoured on every POST.

A key is kept ``SVC_IDEMPOTENCY_TTL`` (24 h) per organisation, environment and key. The
first successful (2xx) response is stored and replayed with ``Idempotent-Replayed: true``;
a failed request releases its key so the client can retry with it. A request is "the same"
when its method, path with query, content type and body bytes are the same.
"""

from __future__ import annotations

from aiohttp import web

from api.auth import scope_of
from api.problems import FieldError, Handler, Problem
from svc.http import CONTEXT
from svc.store.idempotency import fingerprint

HEADER = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"
MAX_KEY_LENGTH = 255
REQUIRED = frozenset({"/v1/payments", "/v1/terminals/{terminal_id}/payments"})
"""Route templates whose POST must carry a key: the ones that create payments."""


def _key_error(code: str, status: int, detail: str, field_code: str) -> Problem:
    return Problem(status, code, detail, [FieldError(HEADER, field_code, detail)])


def _check_key(key: str) -> None:
    if not 1 <= len(key) <= MAX_KEY_LENGTH or not all(" " <= c <= "~" for c in key):
        raise _key_error(
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
        if template in REQUIRED:
            raise _key_error(
                "idempotency_key_missing",
                400,
                f"Send an {HEADER} header: it makes retrying this request safe.",
                "required",
            )
        return await handler(request)
    _check_key(key)
    body = await request.read()
    fp = fingerprint(request.method, request.path_qs, request.content_type, body)
    scope = scope_of(request)
    store = request.app[CONTEXT].idempotency
    claim = await store.claim(scope, key, fp)
    if claim.outcome == "mismatch":
        raise _key_error(
            "idempotency_key_reused",
            422,
            f"This {HEADER} was used for a request with other parameters.",
            "reused",
        )
    if claim.outcome == "running":
        raise Problem(
            409,
            "idempotency_request_in_progress",
            f"A request with this {HEADER} is still running; retry shortly.",
            headers={"Retry-After": "1"},
        )
    if claim.outcome == "done":
        return web.Response(
            status=claim.status,
            body=claim.body,
            headers={"Content-Type": claim.content_type, REPLAYED: "true"},
        )
    try:
        response = await handler(request)
    except BaseException:
        await store.release(scope, key, fp)
        raise
    if (
        isinstance(response, web.Response)
        and 200 <= response.status < 300
        and isinstance(response.body, bytes)
    ):
        content_type = response.headers.get("Content-Type", "application/json")
        await store.store(scope, key, fp, response.status, response.body, content_type)
    else:
        await store.release(scope, key, fp)
    return response
