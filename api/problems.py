"""RFC 9457 Problem Details: every error the API returns, with a stable ``code``.

Tree::

    Problem              any error answered to a client (status, stable code, detail)
    ├── InvalidInput     422 with the offending fields in ``errors``
    ├── NotFound         404
    └── Unauthorized     401 with ``WWW-Authenticate``

Every other status is a plain ``Problem``. ``api.middleware.errors`` answers every error
of a request as one of these. Codes are those of ``api.codes``: any other is refused at once.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from http import HTTPStatus

import orjson
from aiohttp import web

from api.codes import check_field, check_problem

log = logging.getLogger(__name__)

PROBLEM_TYPE_BASE = "/problems/"  # a relative reference, as RFC 9457 §3.1.1 allows
CONTENT_TYPE = "application/problem+json"


@dataclass(frozen=True, slots=True)
class FieldError:
    """One offending input field."""

    field: str
    code: str
    detail: str

    def __post_init__(self) -> None:
        check_field(self.code)


class Problem(Exception):
    """An error answered as ``application/problem+json``."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        errors: list[FieldError] | None = None,
        headers: dict[str, str] | None = None,
        members: dict[str, object] | None = None,
    ) -> None:
        """``members`` are extension members of the body (RFC 9457 §3.2), e.g. ``permission``."""
        check_problem(status, code)
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.errors = errors or []
        self.headers = headers or {}
        self.members = members or {}

    def response(self) -> web.Response:
        body: dict[str, object] = {
            "type": PROBLEM_TYPE_BASE + self.code,
            "title": HTTPStatus(self.status).phrase,
            "status": self.status,
            "detail": self.detail,
            "code": self.code,
            **self.members,
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


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
