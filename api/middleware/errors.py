"""Every error of a request answered as an RFC 9457 Problem: the API's own, aiohttp's HTTP
errors (unknown route, wrong method, body too large) and the kernel's (``svc.errors``):
``Unavailable`` is a 503 ``service_unavailable`` with ``Retry-After``, ``InvalidCursor`` a
422 naming ``cursor``, and the idempotency errors a 422 ``idempotency_key_reused`` or a 409
``idempotency_request_in_progress``. A request whose client went away while its body was read
is recorded as 499 (nobody is left to answer), not as an error of the server."""

from __future__ import annotations

import logging

from aiohttp import web
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from api.problems import FieldError, Handler, InvalidInput, Problem
from svc.errors import InvalidCursor, KeyReused, RequestInProgress, ServiceError, Unavailable

log = logging.getLogger(__name__)


@web.middleware
async def problem_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Answer every error as a Problem."""
    try:
        return await handler(request)
    except Problem as problem:
        return problem.response()
    except (ServiceError, RedisConnectionError, RedisTimeoutError) as exc:
        return kernel_problem(request, exc).response()
    except ConnectionResetError:  # reading the body: the client went away, nobody to answer
        log.info("%s %r: the client closed the connection", request.method, request.path)
        return web.Response(status=CLIENT_CLOSED)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return http_problem(exc).response()
    except Exception:
        log.exception("unhandled error on %s %r", request.method, request.path)
        return Problem(500, "internal_error", "The server failed to handle the request.").response()


def http_problem(exc: web.HTTPException) -> Problem:
    """The Problem answering an error of the HTTP layer itself (no route, wrong method, ...)."""
    headers = {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None
    match exc.status:
        case 400:
            return Problem(400, "bad_request", "The request is malformed.", headers=headers)
        case 404:
            return Problem(404, "route_not_found", "No route matches this path.", headers=headers)
        case 405:
            detail = "This route does not accept that method."
            return Problem(405, "method_not_allowed", detail, headers=headers)
        case 413:
            detail = "The request body is too large."
            return Problem(413, "payload_too_large", detail, headers=headers)
    return Problem(exc.status, "http_error", exc.reason, headers=headers)


RETRY_AFTER = "2"
CLIENT_CLOSED = 499
"""The status recorded (never sent) for a request whose client went away first."""
IDEMPOTENCY_HEADER = "Idempotency-Key"


def kernel_problem(request: web.Request, exc: Exception) -> Problem:
    """The Problem answering a kernel error (or a lost Redis connection)."""
    if isinstance(exc, InvalidCursor):
        return InvalidInput([FieldError("cursor", "invalid_cursor", "Unknown cursor.")])
    if isinstance(exc, KeyReused):
        detail = f"This {IDEMPOTENCY_HEADER} was used for a request with other parameters."
        return Problem(
            422,
            "idempotency_key_reused",
            detail,
            [FieldError(IDEMPOTENCY_HEADER, "reused", detail)],
        )
    if isinstance(exc, RequestInProgress):
        return Problem(
            409,
            "idempotency_request_in_progress",
            f"A request with this {IDEMPOTENCY_HEADER} is still running; retry shortly.",
            headers={"Retry-After": "1"},
        )
    service = exc.service if isinstance(exc, Unavailable) else "redis"
    if isinstance(exc, Unavailable | RedisConnectionError | RedisTimeoutError):
        log.warning("%s %r: %s unavailable: %s", request.method, request.path, service, exc)
        return Problem(
            503,
            "service_unavailable",
            "The service cannot reach its storage right now; retry shortly.",
            headers={"Retry-After": RETRY_AFTER},
        )
    log.error("unmapped service error on %s %r", request.method, request.path, exc_info=exc)
    return Problem(500, "internal_error", "The server failed to handle the request.")
