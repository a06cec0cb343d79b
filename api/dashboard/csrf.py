"""CSRF tokens: every dashboard form carries one in the field ``csrf_token``.

Signed-in forms carry the session's token (kept with the session in Redis). The sign-in form,
which has no session yet, carries a token that is also in a short-lived ``HttpOnly``,
``SameSite=Strict`` cookie (double submit), so no other site can sign a browser in to an
account of its choosing. A POST whose token does not match is refused with a 403 page.
"""

from __future__ import annotations

import secrets

from aiohttp import web

from api.input.fields import form_fields

FIELD = "csrf_token"
LOGIN_COOKIE = "svc_login_csrf"
LOGIN_COOKIE_PATH = "/dashboard/login"
LOGIN_COOKIE_AGE = 3600
_MAX = 100


class CsrfRefused(Exception):
    """The POST carried no token, or not the expected one."""


def new_token() -> str:
    return secrets.token_urlsafe(32)


def login_token(request: web.Request) -> str:
    """The sign-in form's token: the one in the browser's cookie when it is sound, else new."""
    token = request.cookies.get(LOGIN_COOKIE, "")
    return token if 20 <= len(token) <= _MAX and token.isascii() else new_token()


def _same(sent: str, expected: str) -> bool:
    if not (sent and expected and sent.isascii() and expected.isascii()):
        return False
    return secrets.compare_digest(sent, expected)


async def sent_token(request: web.Request) -> str:
    """The token a POST carries in its form (empty when none)."""
    value = (await form_fields(request)).get(FIELD)
    return value if isinstance(value, str) and len(value) <= _MAX and value.isascii() else ""


async def verify(request: web.Request, expected: str) -> None:
    """Raise CsrfRefused unless the POST's form carries ``expected``."""
    if not _same(await sent_token(request), expected):
        raise CsrfRefused


async def verify_login(request: web.Request) -> None:
    """Raise CsrfRefused unless the sign-in POST carries the token of its cookie."""
    if not _same(await sent_token(request), request.cookies.get(LOGIN_COOKIE, "")):
        raise CsrfRefused
