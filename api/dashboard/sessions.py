"""Dashboard sessions: kept server-side in Redis with an idle time-out and a lifetime, named
by a random id in a cookie.

Redis holds only what may be lost: losing a session means signing in again. A session holds
the scope the API key resolved to (organisation and environment), the organisation's name,
the key's id and readable prefix, the SHA-256 digest of the secret it signed in with (the
digest the key's row keeps; the guard ends the session once that secret stops working) and the
session's CSRF token; never the key's secret. It is stored under the SHA-256 digest of its id,
so whoever reads Redis cannot take over a session. Each read renews the idle time-out
(``SVC_DASHBOARD_SESSION_TTL``) but never past ``SVC_DASHBOARD_SESSION_MAX_AGE`` after
signing in: then the session ends however often it is used. A stored session that does not
read as today's ``Session`` (one from before sessions named their secret, say) is no session:
its holder signs in again.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import secrets
import time
from dataclasses import asdict, dataclass

import orjson
from aiohttp import web
from redis.asyncio import Redis

from svc.orgs import Scope
from svc.rediskeys import Keys

COOKIE = "svc_session"
COOKIE_PATH = "/dashboard"
LOOPBACK_NAMES = frozenset({"localhost"})


@dataclass(frozen=True, slots=True)
class Session:
    """A signed-in dashboard user: what one API key sees, and the CSRF token of its forms."""

    org: str
    org_name: str
    env: str
    key_id: str
    """The key signed in with: the session ends when it is revoked or expires."""
    key_prefix: str
    secret_digest: str
    """The hex SHA-256 digest of the secret signed in with: the session ends when a roll
    expires that secret."""
    csrf: str
    created_ms: int

    @property
    def scope(self) -> Scope:
        return Scope(self.org, self.env)


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def _well_formed(session: Session) -> bool:
    digest = session.secret_digest
    return len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)


class Sessions:
    """Creates, reads (renewing the idle time-out within the lifetime) and ends sessions in
    Redis."""

    def __init__(self, redis: Redis, keys: Keys, ttl: float, max_age: float) -> None:
        self._redis = redis
        self._keys = keys
        self._ttl = max(1, round(ttl))
        self._max_age_ms = int(max_age * 1000)

    async def create(self, session: Session) -> str:
        """Store ``session`` and return its new random id (the cookie's value)."""
        session_id = secrets.token_urlsafe(32)
        key = self._keys.dashboard_session(_digest(session_id))
        ttl = min(self._ttl, self._seconds_left(session))
        await self._redis.set(key, orjson.dumps(asdict(session)), ex=max(1, ttl))
        return session_id

    async def load(self, session_id: str) -> Session | None:
        """The session, its idle time-out renewed up to its lifetime's end; None when it
        ended, expired, outlived its lifetime or was lost."""
        if not 20 <= len(session_id) <= 100:
            return None
        key = self._keys.dashboard_session(_digest(session_id))
        raw = await self._redis.getex(key, ex=self._ttl)
        if raw is None:
            return None
        try:
            session = Session(**orjson.loads(raw))
        except (orjson.JSONDecodeError, TypeError):
            return None
        left = self._seconds_left(session)
        if left <= 0 or not _well_formed(session):
            await self._redis.delete(key)
            return None
        if left < self._ttl:
            await self._redis.expire(key, left)
        return session

    async def end(self, session_id: str) -> None:
        await self._redis.delete(self._keys.dashboard_session(_digest(session_id)))

    def _seconds_left(self, session: Session) -> int:
        """Whole seconds until the session's lifetime ends, rounded up (0: it has ended)."""
        left_ms = session.created_ms + self._max_age_ms - time.time() * 1000
        return max(0, math.ceil(left_ms / 1000))


def plain_local(request: web.Request) -> bool:
    """Whether the request is plain http to this machine (localhost, 127.0.0.1, ::1)."""
    if request.secure:
        return False
    host = (request.url.host or "").strip("[]").lower()
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def cookie_secure(request: web.Request, secure_setting: bool) -> bool:
    """The ``Secure`` rule: always, unless ``SVC_DASHBOARD_SECURE_COOKIES`` is false *and* the
    request is plain http to localhost (a laptop's ``make run``, the tests)."""
    return secure_setting or not plain_local(request)


def set_cookie(
    response: web.StreamResponse,
    request: web.Request,
    secure_setting: bool,
    name: str,
    value: str,
    path: str = COOKIE_PATH,
    max_age: int | None = None,
) -> None:
    """Set a dashboard cookie: ``HttpOnly``, ``SameSite=Strict``, ``Secure`` by the rule."""
    response.set_cookie(
        name,
        value,
        path=path,
        max_age=max_age,
        httponly=True,
        samesite="Strict",
        secure=cookie_secure(request, secure_setting),
    )


def clear_cookie(response: web.StreamResponse, name: str, path: str = COOKIE_PATH) -> None:
    response.del_cookie(name, path=path, httponly=True, samesite="Strict")
