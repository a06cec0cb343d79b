"""Idempotency keys: the first response to a request, stored in the transaction of the state
change it answers for, and kept for the API key that made it.

A record belongs to (organisation, environment, API key, ``Idempotency-Key``): another API key
of the organisation sending the same ``Idempotency-Key`` and body makes a new request of its
own and never sees the first key's answer, which may carry a secret (a new API key's, an
endpoint's signing secret). The key's id is also part of the stored fingerprint, and the
record keeps the key's permissions when it was made: a replay to a key that no longer has
them all is refused (``PermissionsExceeded``), so narrowing a key's permissions also takes
back the answers it stored. Records made before records named their key and that no single
key can have made are kept under no key (``UNATTRIBUTED``, migration 0010): their
``Idempotency-Key`` is ``KeyReused`` in their scope until they expire, for every key.

A request with a key takes a transaction-level advisory lock on (organisation, environment,
API key, key) in its unit of work: a second request with the same key while the first runs
is told so (``RequestInProgress``) instead of waiting. With the lock held it looks for a
stored response: the same parameters replay it, others are ``KeyReused``. Otherwise the use
case runs and its response is stored before the commit, so the change and the record of it
commit together; a crash at any point leaves either both or neither. Records are kept
``SVC_IDEMPOTENCY_TTL`` and their bodies are encrypted (a response may carry a secret).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Protocol

from svc.crypto import SecretBox, digest
from svc.db import Database, Unit, lock_id
from svc.errors import KeyReused, RequestInProgress
from svc.keys.errors import PermissionsExceeded
from svc.keys.model import Permissions, beyond
from svc.orgs import Scope

UNATTRIBUTED = ""
"""The key id of records stored before records named their key, when no single key can have
made them: they never replay."""


class Caller(Protocol):
    """The API key a request is sent with (``svc.keys.model.ApiKey``)."""

    @property
    def id(self) -> str: ...

    @property
    def permissions(self) -> Permissions: ...


@dataclass(frozen=True, slots=True)
class Stored:
    """A response kept for replay."""

    status: int
    body: bytes
    content_type: str


def fingerprint(*parts: bytes | str) -> str:
    """A digest of what makes two requests "the same": method, path, content type, body."""
    mac = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        mac.update(len(data).to_bytes(8, "big"))
        mac.update(data)
    return mac.hexdigest()


def owned(key_id: str, request_fp: str) -> str:
    """The stored fingerprint: the request's, and the API key that sent it (migration 0010
    computes the same in SQL)."""
    return fingerprint(key_id, request_fp)


LOOKUP = """SELECT held.locked, k.api_key_id, k.fingerprint, k.permissions, k.status,
                  k.content_type, k.body, k.body_key_id
           FROM (SELECT pg_try_advisory_xact_lock($1) AS locked) AS held
           LEFT JOIN LATERAL (
               SELECT * FROM idempotency_keys
               WHERE held.locked AND org_id = $2 AND env = $3 AND api_key_id = $5
                 AND key_digest = $4 AND expires_at > now()
               UNION ALL
               SELECT * FROM idempotency_keys
               WHERE held.locked AND org_id = $2 AND env = $3 AND api_key_id = $6
                 AND key_digest = $4 AND expires_at > now()) AS k ON true"""
"""One round trip: the key's lock, and its records only when the lock was taken: the
caller's and an unattributed one of the scope (one row each, or one row of nulls). Each is
looked up by the whole primary key: asked for both at once (``api_key_id IN``, in order),
the plan PostgreSQL settles on for a prepared statement scans every record of the scope."""


def _lock_id(scope: Scope, caller: Caller, key_digest: bytes) -> int:
    return lock_id(b"idem", scope.org.encode(), scope.env.encode(), caller.id.encode(), key_digest)


class Idempotency:
    """Looks up, records and expires idempotency records."""

    def __init__(self, db: Database, box: SecretBox, ttl_s: float) -> None:
        self._db = db
        self._box = box
        self._ttl_s = ttl_s

    async def begin(
        self, unit: Unit, scope: Scope, caller: Caller, key: str, fp: str
    ) -> Stored | None:
        """Hold ``key`` of ``caller`` for this unit; the stored response to replay, or None to
        go ahead."""
        key_digest = digest(key)
        rows = await unit.fetch(
            LOOKUP,
            _lock_id(scope, caller, key_digest),
            scope.org,
            scope.env,
            key_digest,
            caller.id,
            UNATTRIBUTED,
        )
        if not rows[0]["locked"]:
            raise RequestInProgress(key)
        found = [row for row in rows if row["fingerprint"] is not None]
        if not found:
            return None
        row = min(found, key=lambda r: r["api_key_id"])  # an unattributed record first
        if row["api_key_id"] == UNATTRIBUTED or row["fingerprint"] != owned(caller.id, fp):
            raise KeyReused(key)
        stored_with = None if row["permissions"] is None else tuple(row["permissions"])
        lacking = beyond(stored_with, caller.permissions)
        if lacking is not None:
            raise PermissionsExceeded(lacking)
        body = self._box.open(row["body_key_id"], bytes(row["body"]), _bound(scope, key_digest))
        return Stored(row["status"], body, row["content_type"])

    async def remember(
        self, unit: Unit, scope: Scope, caller: Caller, key: str, fp: str, response: Stored
    ) -> None:
        """Store ``response`` for ``caller`` in ``unit``, to commit with the change it reports
        (a staged write, sent with the change's own rows: see ``Unit.write``)."""
        key_digest = digest(key)
        key_id, sealed = self._box.seal(response.body, _bound(scope, key_digest))
        unit.write(  # staged: it commits with the change, in one statement with its rows
            """INSERT INTO idempotency_keys (org_id, env, api_key_id, key_digest, fingerprint,
                                             permissions, status, content_type, body,
                                             body_key_id, expires_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
                       now() + make_interval(secs => $11))
               ON CONFLICT (org_id, env, api_key_id, key_digest) DO UPDATE SET
                   fingerprint = excluded.fingerprint, permissions = excluded.permissions,
                   status = excluded.status, content_type = excluded.content_type,
                   body = excluded.body, body_key_id = excluded.body_key_id,
                   created_at = now(), expires_at = excluded.expires_at""",
            scope.org,
            scope.env,
            caller.id,
            key_digest,
            owned(caller.id, fp),
            None if caller.permissions is None else list(caller.permissions),
            response.status,
            response.content_type,
            sealed,
            key_id,
            self._ttl_s,
        )

    async def purge_expired(self, batch: int = 5000) -> int:
        """Delete expired records, a batch at a time; returns how many."""
        total = 0
        while True:
            status = await self._db.execute(
                """DELETE FROM idempotency_keys WHERE ctid IN (
                       SELECT ctid FROM idempotency_keys WHERE expires_at <= now() LIMIT $1)""",
                batch,
            )
            count = int(status.rsplit(" ", 1)[-1])
            total += count
            if count < batch:
                return total


def _bound(scope: Scope, key_digest: bytes) -> str:
    return f"idempotency:{scope.org}:{scope.env}:{key_digest.hex()}"
