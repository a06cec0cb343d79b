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

A record is claimed by its primary key, in the statement that makes the change it answers
for: the use case runs, its response is staged as the record, and both commit together, so a
crash at any point leaves either both or neither. A record already there and not expired
fails that statement as a unique violation (``taken``), which rolls the change back; a
request that races the first waits on the key's index entry until the first commits (then
it is taken) or rolls back (then it goes ahead). The caller then reads the stored response
(``find``): the same parameters replay it, others are ``KeyReused``. Records are kept
``SVC_IDEMPOTENCY_TTL`` and their bodies are encrypted (a response may carry a secret); an
expired one not purged yet is overwritten.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Protocol

import asyncpg

from svc.crypto import SecretBox, digest
from svc.db import Database, Unit
from svc.errors import KeyReused
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


_MATCH = """FROM idempotency_keys WHERE org_id = $1 AND env = $2 AND key_digest = $3
                                     AND expires_at > now()"""
LOOKUP = f"""SELECT api_key_id, fingerprint, permissions, status, content_type, body, body_key_id
             {_MATCH} AND api_key_id = $4
             UNION ALL
             SELECT api_key_id, fingerprint, permissions, status, content_type, body, body_key_id
             {_MATCH} AND api_key_id = $5"""
"""The caller's record and an unattributed one of the scope, each read by the whole primary
key: asked for both at once (``api_key_id IN``), the plan PostgreSQL settles on for a
prepared statement scans every record of the scope."""

CLAIM = """INSERT INTO idempotency_keys (org_id, env, api_key_id, key_digest, fingerprint,
                                       permissions, status, content_type, body, body_key_id,
                                       expires_at)
           SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now() + make_interval(secs => $11)
           WHERE CASE WHEN EXISTS (SELECT FROM idempotency_keys
                                   WHERE org_id = $1 AND env = $2 AND api_key_id = $12
                                     AND key_digest = $4 AND expires_at > now())
                      THEN idempotency_key_taken() ELSE true END
           ON CONFLICT (org_id, env, api_key_id, key_digest) DO UPDATE SET
               fingerprint = excluded.fingerprint, permissions = excluded.permissions,
               status = excluded.status, content_type = excluded.content_type,
               body = excluded.body, body_key_id = excluded.body_key_id,
               created_at = now(), expires_at = excluded.expires_at
           WHERE CASE WHEN idempotency_keys.expires_at <= now() THEN true
                      ELSE idempotency_key_taken() END"""
"""The record, unless the key is taken: a live record of the caller's, or an unattributed
one of the scope, fails the statement (``idempotency_key_taken``, migration 0019, raises a
unique violation of the primary key); an expired one is overwritten. ``CASE`` fixes the
order: the function runs only when the key is taken."""


def taken(exc: BaseException) -> bool:
    """Whether ``exc`` says the request's key already has a record (see ``CLAIM``)."""
    return (
        isinstance(exc, asyncpg.UniqueViolationError)
        and exc.constraint_name == "idempotency_keys_pkey"
    )


class Idempotency:
    """Looks up, records and expires idempotency records."""

    def __init__(self, db: Database, box: SecretBox, ttl_s: float) -> None:
        self._db = db
        self._box = box
        self._ttl_s = ttl_s

    async def find(self, scope: Scope, caller: Caller, key: str, fp: str) -> Stored | None:
        """The response stored for ``key`` of ``caller`` to replay, or None; raises
        ``KeyReused`` when it answered other parameters (or no single key can have made it),
        ``PermissionsExceeded`` when the caller has lost a permission it had then."""
        key_digest = digest(key)
        rows = await self._db.fetch(
            LOOKUP, scope.org, scope.env, key_digest, caller.id, UNATTRIBUTED
        )
        if not rows:
            return None
        row = min(rows, key=lambda r: r["api_key_id"])  # an unattributed record first
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
        (a staged write, sent with the change's own rows: see ``Unit.write``). The unit fails
        at its commit, ``taken``, when the key already has a live record."""
        key_digest = digest(key)
        key_id, sealed = self._box.seal(response.body, _bound(scope, key_digest))
        unit.write(  # staged: it commits with the change, in one statement with its rows
            CLAIM,
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
            UNATTRIBUTED,
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
