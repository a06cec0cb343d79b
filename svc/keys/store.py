"""API keys in PostgreSQL: made, listed, rolled, revoked and resolved; secrets as digests only.

A key's secret is shown once, when it is made or rolled; only its SHA-256 digest and a
readable prefix are kept. Rolling keeps the previous secret working until the
time the roll names (one previous secret, the newest, as for webhook endpoints). A revoked or
expired key resolves to nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import RedisError

from svc.crypto import digest
from svc.db import Database, Queries, Unit
from svc.db.paging import page
from svc.db.times import opt_dt, opt_ms, to_dt, to_ms
from svc.ids import new_id, new_secret
from svc.keys.model import (
    KEY_PREFIXES,
    READABLE_PREFIX,
    ApiKey,
    Authenticated,
    Permissions,
    environment_of,
)
from svc.orgs.model import Scope
from svc.orgs.store import Organisations
from svc.rediskeys import Keys

log = logging.getLogger(__name__)

_COLUMNS = """id, org_id, env, name, prefix, permissions, created_at, expires_at, revoked_at,
              last_used_at, previous_expires_at"""


class KeyChanges:
    """Announces on Redis that a key was rolled or revoked (``[key_id]``); a lost notice is
    bounded by the time to live of the API's cache of resolved keys.

    This process's own listeners (``local``) are told first and at once: its next request
    must not wait for the notice to come back from Redis."""

    def __init__(self, redis: Redis, keys: Keys) -> None:
        self._redis = redis
        self._channel = keys.api_key_changes
        self.local: list[Callable[[str], None]] = []

    async def announce(self, key_id: str) -> None:
        for listener in self.local:
            listener(key_id)
        try:
            await self._redis.publish(self._channel, key_id)
        except RedisError as exc:
            log.warning("change of %s not announced (Redis: %s)", key_id, exc)

    def after(self, unit: Unit, key_id: str) -> None:
        unit.after_commit(lambda: self.announce(key_id))


class ApiKeys:
    """Makes, lists, rolls, revokes and resolves API keys."""

    def __init__(self, db: Database, orgs: Organisations) -> None:
        self._db = db
        self._orgs = orgs

    async def create(
        self,
        env: str,
        org_name: str = "default",
        name: str = "",
        permissions: Permissions = None,
        expires_ms: int | None = None,
    ) -> tuple[str, Scope]:
        """A new key for ``env`` in organisation ``org_name`` (made if it does not exist); the
        secret is returned only here."""
        if env not in KEY_PREFIXES:
            raise ValueError(f"environment must be test or live, not {env!r}")
        async with self._db.transaction() as unit:
            org = await self._orgs.ensure(org_name, unit)
            secret, key = await make_key(unit, Scope(org, env), name, permissions, expires_ms)
        return secret, key.scope

    async def page(
        self, scope: Scope, limit: int, cursor: str | None
    ) -> tuple[list[ApiKey], str | None]:
        """The scope's keys, revoked ones included, newest first, and the next page's cursor."""
        select = f"SELECT {_COLUMNS} FROM api_keys WHERE org_id = $1 AND env = $2"
        return await page(self._db, select, [scope.org, scope.env], limit, cursor, _key)

    async def get(self, key_id: str, scope: Scope | None = None) -> ApiKey | None:
        """The key ``key_id`` (of ``scope`` only, when given)."""
        row = await self._db.fetchrow(f"SELECT {_COLUMNS} FROM api_keys WHERE id = $1", key_id)
        if row is None or (scope is not None and _key(row).scope != scope):
            return None
        return _key(row)

    async def roll(
        self, q: Queries, key_id: str, expire_previous_in: int, scope: Scope | None = None
    ) -> tuple[str, ApiKey] | None:
        """A new secret for a key that is not revoked; the current one keeps working for
        ``expire_previous_in`` seconds (0: it stops now). None: no such key (in ``scope``)."""
        found = await self._locked(q, key_id, scope)
        if found is None or found.revoked_ms is not None:
            return None
        secret = new_secret(KEY_PREFIXES[found.env])
        row = await q.fetchrow(
            f"""UPDATE api_keys
                SET previous_digest = CASE WHEN $4 > 0 THEN digest END,
                    previous_expires_at = CASE WHEN $4 > 0
                        THEN now() + make_interval(secs => $4) END,
                    digest = $2, prefix = $3
                WHERE id = $1 RETURNING {_COLUMNS}""",
            key_id,
            digest(secret),
            secret[:READABLE_PREFIX],
            expire_previous_in,
        )
        assert row is not None
        return secret, _key(row)

    async def revoke(self, q: Queries, key_id: str, scope: Scope | None = None) -> ApiKey | None:
        """Revoke a key (again: no change); None when there is no such key (in ``scope``)."""
        if await self._locked(q, key_id, scope) is None:
            return None
        row = await q.fetchrow(
            f"""UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()),
                       previous_digest = NULL, previous_expires_at = NULL
                WHERE id = $1 RETURNING {_COLUMNS}""",
            key_id,
        )
        assert row is not None
        return _key(row)

    async def authenticate(self, secret: str) -> Authenticated | None:
        """The usable key whose current secret, or previous one still working, is ``secret``."""
        env = environment_of(secret)
        if env is None:
            return None
        found = await self.by_digest(digest(secret))
        return found if found is not None and found.key.env == env else None

    async def by_digest(self, secret_digest: bytes) -> Authenticated | None:
        """As ``authenticate``, given only the secret's digest (what a dashboard session keeps
        of the secret it signed in with)."""
        row = await self._db.fetchrow(
            f"""SELECT {_COLUMNS}, digest = $1 AS current
                FROM api_keys WHERE digest = $1 OR previous_digest = $1""",
            secret_digest,
        )
        if row is None:
            return None
        key, now_ms = _key(row), int(time.time() * 1000)
        until = key.expires_ms
        if not row["current"]:
            expires = key.previous_expires_ms
            if expires is None or now_ms >= expires:
                return None
            until = expires if until is None else min(until, expires)
        return Authenticated(key, until) if key.usable(now_ms) else None

    async def resolve(self, secret: str) -> Scope | None:
        """The scope of a usable key's ``secret``, or None."""
        found = await self.authenticate(secret)
        return None if found is None else found.key.scope

    async def touch(self, key_id: str) -> None:
        """Record a use of the key, to the minute: one write a minute at most."""
        await self._db.execute(
            """UPDATE api_keys SET last_used_at = date_trunc('minute', now())
               WHERE id = $1
                 AND (last_used_at IS NULL OR last_used_at < date_trunc('minute', now()))""",
            key_id,
        )

    async def _locked(self, q: Queries, key_id: str, scope: Scope | None) -> ApiKey | None:
        row = await q.fetchrow(f"SELECT {_COLUMNS} FROM api_keys WHERE id = $1 FOR UPDATE", key_id)
        if row is None or (scope is not None and _key(row).scope != scope):
            return None
        return _key(row)


async def make_key(
    q: Queries,
    scope: Scope,
    name: str = "",
    permissions: Permissions = None,
    expires_ms: int | None = None,
) -> tuple[str, ApiKey]:
    """A new key of ``scope``, written with ``q``; the secret is returned only here."""
    secret = new_secret(KEY_PREFIXES[scope.env])
    row = await q.fetchrow(
        f"""INSERT INTO api_keys
                (id, digest, prefix, org_id, env, name, permissions, expires_at, created_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING {_COLUMNS}""",
        new_id("key"),
        digest(secret),
        secret[:READABLE_PREFIX],
        scope.org,
        scope.env,
        name,
        None if permissions is None else list(permissions),
        opt_dt(expires_ms),
        to_dt(int(time.time() * 1000)),  # to the millisecond, as list cursors hold it
    )
    assert row is not None
    return secret, _key(row)


def _key(row: Any) -> ApiKey:
    permissions = row["permissions"]
    return ApiKey(
        id=row["id"],
        org=row["org_id"],
        env=row["env"],
        name=row["name"],
        prefix=row["prefix"],
        permissions=None if permissions is None else tuple(permissions),
        created_ms=to_ms(row["created_at"]),
        expires_ms=opt_ms(row["expires_at"]),
        revoked_ms=opt_ms(row["revoked_at"]),
        last_used_ms=opt_ms(row["last_used_at"]),
        previous_expires_ms=opt_ms(row["previous_expires_at"]),
    )
