"""The dashboard's middleware: security headers on every response, the session required on
every page but sign-in and static files (and ended once the secret it signed in with stops
working: its key revoked or expired, or a roll that expired that secret, at once or when its
grace period ended), the CSRF token checked on every POST, and errors answered as HTML pages
(an id outside the session's scope is a 404 page, like a missing one).

The secret is looked up in PostgreSQL on every request, the delivery log's polls included,
not in a cache: a roll or a revocation committed by any API process ends the session on every
process at its next request.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from urllib.parse import quote

from aiohttp import web
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from api.dashboard import csrf
from api.dashboard.rendering import SECURITY_HEADERS, SESSION, redirect, render
from api.dashboard.sessions import COOKIE, Session, Sessions, clear_cookie
from api.middleware.auth import SCOPE
from api.problems import Handler, Problem
from svc.errors import InvalidCursor, Unavailable
from svc.http import CONTEXT

log = logging.getLogger(__name__)

SESSIONS = web.AppKey("dashboard_sessions", Sessions)
LOGIN = "/dashboard/login"
STATIC = "/dashboard/static/"

_TITLES = {
    400: "Bad request",
    401: "Session ended",
    403: "Refused",
    404: "Not found",
    405: "Not allowed",
    413: "Too large",
    500: "Server error",
    503: "Unavailable",
}


@web.middleware
async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    response = await answered(request, _guarded(request, handler))
    response.headers.update(SECURITY_HEADERS)
    if not request.path.startswith(STATIC):
        response.headers["Cache-Control"] = "no-store"
    return response


async def answered(
    request: web.Request, answering: Awaitable[web.StreamResponse]
) -> web.StreamResponse:
    """The page ``answering`` gives, or the error page of what it raised (the dashboard's and
    the portal's alike)."""
    try:
        response = await answering
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        response = error_page(request, exc.status, exc.reason)
    except Problem as problem:
        response = error_page(request, problem.status, problem.detail)
    except InvalidCursor:
        response = error_page(request, 400, "This page link is not valid; start from the list.")
    except csrf.CsrfRefused:
        detail = "The form was refused: it did not carry this session's token. Reload the page."
        response = error_page(request, 403, detail)
    except (Unavailable, RedisConnectionError, RedisTimeoutError) as exc:
        log.warning("dashboard %s %r: storage unavailable: %s", request.method, request.path, exc)
        response = error_page(request, 503, "The service cannot reach its storage; retry shortly.")
        response.headers["Retry-After"] = "2"
    except Exception:
        log.exception("dashboard: unhandled error on %s %r", request.method, request.path)
        response = error_page(request, 500, "The server failed to handle the request.")
    return response


async def _guarded(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.path.startswith(STATIC):
        return await handler(request)
    session_id = request.cookies.get(COOKIE, "")
    session = await request.app[SESSIONS].load(session_id) if session_id else None
    if request.path == LOGIN:
        if request.method == "POST":
            await csrf.verify_login(request)
        return await handler(request)
    if session is None:
        notice = "&notice=expired" if session_id else ""
        return redirect(f"{LOGIN}?next={quote(_next(request), safe='/')}{notice}")
    if not await _key_usable(request, session):
        await request.app[SESSIONS].end(session_id)
        response = redirect(f"{LOGIN}?next={quote(_next(request), safe='/')}&notice=key_ended")
        clear_cookie(response, COOKIE)
        return response
    request[SESSION] = session
    request[SCOPE] = session.scope
    if request.method == "POST":
        await csrf.verify(request, session.csrf)
    return await handler(request)


async def _key_usable(request: web.Request, session: Session) -> bool:
    """Whether the secret the session signed in with still works for its key: a session never
    outlives that secret, nor the key."""
    secret_digest = bytes.fromhex(session.secret_digest)
    found = await request.app[CONTEXT].api_keys.by_digest(secret_digest)
    return found is not None and found.key.id == session.key_id and found.key.scope == session.scope


def _next(request: web.Request) -> str:
    """Where to go after signing in: this page when it was a GET, else the dashboard's home."""
    return request.path if request.method == "GET" else "/dashboard"


def error_page(request: web.Request, status: int, detail: str) -> web.Response:
    title = _TITLES.get(status, "Error")
    return render(request, "error.html", status=status, title=title, detail=detail)
