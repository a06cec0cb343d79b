"""Idempotency keys: the first response to a request, stored in the transaction of the state
change it answers for.

A request with a key takes a transaction-level advisory lock on (organisation, environment,
key) in its unit of work: a second request with the same key while the first runs is told
so (``RequestInProgress``) instead of waiting. With the lock held it looks for a stored
response: the same parameters replay it, others are ``KeyReused``. Otherwise the use case
runs and its response is stored before the commit, so the change and the record of it
commit together; a crash at any point leaves either both or neither. Records are kept
``SVC_IDEMPOTENCY_TTL`` and their bodies are encrypted (a response may carry a secret).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from svc.crypto import SecretBox, digest
from svc.db import Database, Unit
from svc.errors import KeyReused, RequestInProgress
from svc.orgs import Scope


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


def _lock_id(scope: Scope, key_digest: bytes) -> int:
    mixed = hashlib.sha256(
        b"idem\0%s\0%s\0%s" % (scope.org.encode(), scope.env.encode(), key_digest)
    )
    return int.from_bytes(mixed.digest()[:8], "big", signed=True)


class Idempotency:
    """Looks up, records and expires idempotency records."""

    def __init__(self, db: Database, box: SecretBox, ttl_s: float) -> None:
        self._db = db
        self._box = box
        self._ttl_s = ttl_s

    async def begin(self, unit: Unit, scope: Scope, key: str, fp: str) -> Stored | None:
        """Hold ``key`` for this unit; the stored response to replay, or None to go ahead."""
        key_digest = digest(key)
        # One round trip: the lock, and the record only when the lock was taken.
        row = await unit.fetchrow(
            """SELECT held.locked, k.fingerprint, k.status, k.content_type, k.body, k.body_key_id
               FROM (SELECT pg_try_advisory_xact_lock($1) AS locked) AS held
               LEFT JOIN idempotency_keys AS k
                 ON held.locked AND k.org_id = $2 AND k.env = $3 AND k.key_digest = $4
                    AND k.expires_at > now()""",
            _lock_id(scope, key_digest),
            scope.org,
            scope.env,
            key_digest,
        )
        if not row["locked"]:
            raise RequestInProgress(key)
        if row["fingerprint"] is None:
            return None
        if row["fingerprint"] != fp:
            raise KeyReused(key)
        body = self._box.open(row["body_key_id"], bytes(row["body"]), _bound(scope, key_digest))
        return Stored(row["status"], body, row["content_type"])

    async def remember(self, unit: Unit, scope: Scope, key: str, fp: str, response: Stored) -> None:
        """Store ``response`` in ``unit``, to commit with the change it reports (a staged
        write, sent with the change's own rows: see ``Unit.write``)."""
        key_digest = digest(key)
        key_id, sealed = self._box.seal(response.body, _bound(scope, key_digest))
        unit.write(  # staged: it commits with the change, in one statement with its rows
            """INSERT INTO idempotency_keys (org_id, env, key_digest, fingerprint, status,
                                             content_type, body, body_key_id, expires_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() + make_interval(secs => $9))
               ON CONFLICT (org_id, env, key_digest) DO UPDATE SET
                   fingerprint = excluded.fingerprint, status = excluded.status,
                   content_type = excluded.content_type, body = excluded.body,
                   body_key_id = excluded.body_key_id, created_at = now(),
                   expires_at = excluded.expires_at""",
            scope.org,
            scope.env,
            key_digest,
            fp,
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
