"""RFC 9457 Problem Details: every error the API returns, with a stable ``code``.

Tree: ``Problem`` (any error answered to a client) has one subclass per status family that
code raises: ``InvalidInput`` (422, with per-field ``errors``), ``NotFound`` (404),
``Unauthorized`` (401). Every other status is a plain ``Problem``. The middleware turns
aiohttp's own HTTP errors (unknown route, wrong method, body too large) into Problems too.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from http import HTTPStatus

import orjson
from aiohttp import web

log = logging.getLogger(__name__)

PROBLEM_TYPE_BASE = "/problems/"  # a relative reference, as RFC 9457 §3.1.1 allows
CONTENT_TYPE = "application/problem+json"


@dataclass(frozen=True, slots=True)
class FieldError:
    """One offending input field."""

    field: str
    code: str
    detail: str


class Problem(Exception):
    """An error answered as ``application/problem+json``."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        errors: list[FieldError] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.errors = errors or []
        self.headers = headers or {}

    def response(self) -> web.Response:
        body: dict[str, object] = {
            "type": PROBLEM_TYPE_BASE + self.code,
            "title": HTTPStatus(self.status).phrase,
            "status": self.status,
            "detail": self.detail,
            "code": self.code,
        }
        if self.errors:
            body["errors"] = [
                {"field": e.field, "code": e.code, "detail": e.detail} for e in self.errors
            ]
        return web.Response(
            status=self.status,
            body=orjson.dumps(body),
            headers={"Content-Type": CONTENT_TYPE, **self.headers},
        )


class InvalidInput(Problem):
    """422 with the list of offending fields."""

    def __init__(
        self, errors: list[FieldError], detail: str = "The request has invalid fields."
    ) -> None:
        super().__init__(422, "validation_error", detail, errors)


class NotFound(Problem):
    def __init__(self, code: str, detail: str) -> None:
        super().__init__(404, code, detail)


class Unauthorized(Problem):
    def __init__(self, code: str, detail: str) -> None:
        super().__init__(401, code, detail, headers={"WWW-Authenticate": 'Bearer realm="svc"'})


_HTTP_CODES = {
    400: ("bad_request", "The request is malformed."),
    404: ("route_not_found", "No route matches this path."),
    405: ("method_not_allowed", "This route does not accept that method."),
    413: ("payload_too_large", "The request body is too large."),
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def problem_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Answer every error as a Problem."""
    try:
        return await handler(request)
    except Problem as problem:
        return problem.response()
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        code, detail = _HTTP_CODES.get(exc.status, ("http_error", exc.reason))
        headers = {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None
        return Problem(exc.status, code, detail, headers=headers).response()
    except Exception:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return Problem(500, "internal_error", "The server failed to handle the request.").response()
