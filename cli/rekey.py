"""Re-encrypting stored signing secrets under the current key of ``SVC_SECRET_KEY``."""

from __future__ import annotations

from svc.crypto import SecretBox
from svc.db import Database

_SECRETS = ("secret", "previous_secret")


async def reencrypt(db: Database, box: SecretBox) -> int:
    """Seal again under ``box.current`` every endpoint secret, current or previous, sealed
    under another key; returns how many were. One transaction: all or none."""
    count = 0
    async with db.transaction() as unit:
        rows = await unit.fetch(
            """SELECT id, secret, secret_key_id, previous_secret, previous_secret_key_id
               FROM webhook_endpoints
               WHERE secret_key_id <> $1 OR previous_secret_key_id <> $1 FOR UPDATE""",
            box.current,
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
