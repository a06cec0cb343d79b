"""Every error of a request answered as an RFC 9457 Problem: the API's own, aiohttp's HTTP
errors (unknown route, wrong method, body too large) and the kernel's, each kernel error by
one table, ``KERNEL`` (``Unavailable`` a 503 ``service_unavailable`` with ``Retry-After``, the
money, webhook endpoint, terminal and API key refusals a 4xx each); routes let kernel errors
pass to it. A request whose client went away while its body was read is recorded as 499
(nobody is left to answer), not as an error of the server."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from api.middleware.permissions import denied
from api.problems import FieldError, Handler, InvalidInput, NotFound, Problem
from svc.errors import (
    InvalidCursor,
    KeyReused,
    RequestInProgress,
    ServiceError,
    TerminalUnavailable,
    Unavailable,
)
from svc.keys.errors import PermissionsExceeded
from svc.money import errors as money
from svc.orgs.errors import NameTaken
from svc.webhooks.errors import EndpointDisabled, TooManyEndpoints

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
    """The Problem answering a kernel error (or a lost Redis connection), from ``KERNEL``."""
    for kind in type(exc).__mro__:
        answer = KERNEL.get(kind)
        if answer is not None:
            return answer(request, exc)
    log.error("unmapped service error on %s %r", request.method, request.path, exc_info=exc)
    return Problem(500, "internal_error", "The server failed to handle the request.")


def _unavailable(request: web.Request, exc: Any) -> Problem:
    service = exc.service if isinstance(exc, Unavailable) else "redis"
    log.warning("%s %r: %s unavailable: %s", request.method, request.path, service, exc)
    return Problem(
        503,
        "service_unavailable",
        "The service cannot reach its storage right now; retry shortly.",
        headers={"Retry-After": RETRY_AFTER},
    )


def _field(status: int, code: str, field: str, field_code: str, detail: str) -> Problem:
    return Problem(status, code, detail, [FieldError(field, field_code, detail)])


def _terminal(request: web.Request, exc: Any) -> Problem:
    terminal_id = request.match_info.get("terminal_id", "")
    if exc.reason == "offline":
        detail = f"Terminal {terminal_id} is offline; it takes payments once it connects."
        return Problem(409, "terminal_offline", detail)
    if exc.reason == "busy":
        detail = (
            f"Terminal {terminal_id} is working on another payment; wait for it to finish or "
            "cancel it."
        )
        return Problem(409, "terminal_busy", detail)
    return NotFound("terminal_not_found", f"No terminal {terminal_id} in this scope.")


KERNEL: dict[type[Exception], Callable[[web.Request, Any], Problem]] = {
    Unavailable: _unavailable,
    RedisConnectionError: _unavailable,
    RedisTimeoutError: _unavailable,
    InvalidCursor: lambda _, exc: InvalidInput(
        [FieldError("cursor", "invalid_cursor", "Unknown cursor.")]
    ),
    KeyReused: lambda _, exc: _field(
        422,
        "idempotency_key_reused",
        IDEMPOTENCY_HEADER,
        "reused",
        f"This {IDEMPOTENCY_HEADER} was used for a request with other parameters.",
    ),
    RequestInProgress: lambda _, exc: Problem(
        409,
        "idempotency_request_in_progress",
        f"The record of this {IDEMPOTENCY_HEADER} changed while it was read; retry shortly.",
        headers={"Retry-After": "1"},
    ),
    # payments and money
    TerminalUnavailable: _terminal,
    money.UnknownPayment: lambda _, exc: NotFound(
        "payment_not_found", "No such payment in this scope."
    ),
    money.NotSucceeded: lambda _, exc: Problem(
        409,
        "payment_not_succeeded",
        f"The payment is {exc.status}; only succeeded payments can be refunded.",
    ),
    money.ExceedsRefundable: lambda _, exc: InvalidInput(
        [
            FieldError(
                "amount",
                "exceeds_refundable",
                f"At most {exc.remaining} Rappen of this payment can still be refunded.",
            )
        ]
    ),
    money.AlreadyChargedBack: lambda _, exc: Problem(
        409, "already_charged_back", "This payment has its chargeback already."
    ),
    money.NothingToDispute: lambda _, exc: Problem(
        409,
        "payment_fully_refunded",
        "The payment was refunded in full; nothing is left to charge back.",
    ),
    money.InsufficientFunds: lambda _, exc: InvalidInput(
        [
            FieldError(
                "amount",
                "insufficient_funds",
                f"{exc.available} Rappen are available for a payout.",
            )
        ]
    ),
    # organisations
    NameTaken: lambda _, exc: _field(
        409,
        "organisation_name_taken",
        "name",
        "taken",
        "An organisation of this name exists; choose another name.",
    ),
    # webhook endpoints
    EndpointDisabled: lambda _, exc: Problem(
        409,
        "endpoint_disabled",
        'The endpoint is disabled; turn it on first (PATCH {"disabled": false}).',
    ),
    TooManyEndpoints: lambda _, exc: Problem(
        422,
        "too_many_endpoints",
        f"This scope has {exc.most} webhook endpoints, its most; delete one first.",
    ),
    # API keys
    PermissionsExceeded: lambda _, exc: denied(
        exc.permission,
        ": a key may only make, roll or revoke keys with no more permissions than its own",
    ),
}
"""Each kernel error (its class or nearest base) and the Problem answering it; the API's
routes let kernel errors pass and this table answers them."""
