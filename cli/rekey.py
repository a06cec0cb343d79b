"""Re-encrypting what endpoints keep sealed (signing secrets, custom headers, client keys) under
the current key of ``SVC_SECRET_KEY``."""

from __future__ import annotations

from svc.crypto import SecretBox
from svc.db import Database

_SECRETS = ("secret", "previous_secret", "headers", "client_key", "url_password")
"""Sealed columns of an endpoint, each with its ``<column>_key_id``."""


async def reencrypt(db: Database, box: SecretBox) -> int:
    """Seal again under ``box.current`` every sealed column of an endpoint (``_SECRETS``)
    sealed under another key; returns how many were. One transaction: all or none."""
    count = 0
    async with db.transaction() as unit:
        columns = ", ".join(f"{c}, {c}_key_id" for c in _SECRETS)
        stale = " OR ".join(f"{c}_key_id <> $1" for c in _SECRETS)
        rows = await unit.fetch(
            f"SELECT id, {columns} FROM webhook_endpoints WHERE {stale} FOR UPDATE", box.current
        )
        for row in rows:
            for column in _SECRETS:
                key_id = row[f"{column}_key_id"]
                if key_id is None or key_id == box.current:
                    continue
                # Bound to the endpoint's id, like every secret of the row (svc.webhooks.store).
                plain = box.open(key_id, bytes(row[column]), row["id"])
                new_key_id, sealed = box.seal(plain, row["id"])
                await unit.execute(
                    f"UPDATE webhook_endpoints SET {column} = $2, {column}_key_id = $3 "
                    "WHERE id = $1",
                    row["id"],
                    sealed,
                    new_key_id,
                )
                count += 1
    return count
