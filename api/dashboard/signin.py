"""Signing in with an API key and signing out.

The key is resolved once, at sign-in; the session keeps its scope, id and readable prefix and
the digest of the secret signed in with, never the secret, and lasts no longer than that
secret works (``guard``) nor past ``SVC_DASHBOARD_SESSION_MAX_AGE`` (``sessions``). Only a
full-access key signs in: a dashboard session can do everything. Each sign-in starts a new
session (a session id is never reused), and signing out ends it in Redis, so its cookie opens
nothing any more.
"""

from __future__ import annotations

import time

from aiohttp import web

from api.dashboard import csrf
from api.dashboard.guard import SESSIONS
from api.dashboard.home import HOME
from api.dashboard.rendering import redirect, render
from api.dashboard.sessions import COOKIE, Session, clear_cookie, set_cookie
from api.input.fields import form_fields
from svc.context import Context
from svc.crypto import digest
from svc.http import CONTEXT
from svc.keys.model import READABLE_PREFIX

MAX_KEY_LENGTH = 200
RESTRICTED = "This key is restricted; sign in with a full-access key."

routes = web.RouteTableDef()


def _next(request: web.Request) -> str:
    """A safe place to go after signing in: a dashboard path of this site, else home."""
    target = request.query.get("next", "")
    safe = target.startswith("/dashboard/") and "//" not in target and "\\" not in target
    return target if safe and target.isascii() and target.isprintable() else HOME


def _login_page(request: web.Request, status: int = 200, error: str = "") -> web.Response:
    token = csrf.login_token(request)
    response = render(
        request, "login.html", status=status, csrf_token=token, error=error, next=_next(request)
    )
    set_cookie(
        response,
        request,
        request.app[CONTEXT].settings.dashboard_secure_cookies,
        csrf.LOGIN_COOKIE,
        token,
        path=csrf.LOGIN_COOKIE_PATH,
        max_age=csrf.LOGIN_COOKIE_AGE,
    )
    return response


@routes.get("/login", allow_head=False)
async def login_form(request: web.Request) -> web.Response:
    return _login_page(request)


@routes.post("/login")
async def login(request: web.Request) -> web.Response:
    ctx: Context = request.app[CONTEXT]
    value = (await form_fields(request)).get("api_key")
    secret = value.strip() if isinstance(value, str) else ""
    found = await ctx.api_keys.authenticate(secret) if 0 < len(secret) <= MAX_KEY_LENGTH else None
    if found is None:
        return _login_page(request, 401, "That API key is not valid.")
    if found.key.permissions is not None:
        return _login_page(request, 403, RESTRICTED)
    old = request.cookies.get(COOKIE)
    if old:
        await request.app[SESSIONS].end(old)
    key = found.key
    await ctx.api_keys.touch(key.id)
    session = Session(
        org=key.org,
        org_name=await ctx.orgs.name_of(key.org) or key.org,
        env=key.env,
        key_id=key.id,
        key_prefix=secret[:READABLE_PREFIX],
        secret_digest=digest(secret).hex(),
        csrf=csrf.new_token(),
        created_ms=int(time.time() * 1000),
    )
    session_id = await request.app[SESSIONS].create(session)
    response = redirect(_next(request))
    set_cookie(response, request, ctx.settings.dashboard_secure_cookies, COOKIE, session_id)
    clear_cookie(response, csrf.LOGIN_COOKIE, path=csrf.LOGIN_COOKIE_PATH)
    return response


@routes.post("/logout")
async def logout(request: web.Request) -> web.Response:
    """End the session (the guard checked its CSRF token) and go back to sign-in."""
    await request.app[SESSIONS].end(request.cookies.get(COOKIE, ""))
    response = redirect("/dashboard/login?notice=signed_out")
    clear_cookie(response, COOKIE)
    return response
