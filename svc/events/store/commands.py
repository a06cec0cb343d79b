"""Resend and test-send requests kept in PostgreSQL until the broker confirms them.

A request is written in its caller's transaction (its idempotency record commits with it)
and its row deleted once ``<ns>.commands`` has it; rows left by a failed or lost publish are
taken by the sweep with ``SKIP LOCKED``, so schedulers sweeping at once never send one twice
at the same time.
"""

from __future__ import annotations

from collections.abc import Sequence

from svc.amqp.commands import Resend
from svc.db import Database, Queries, Unit
from svc.db.times import to_dt


class CommandOutbox:
    """The rows of requests not yet confirmed by the broker."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def insert(self, unit: Unit, command: Resend) -> int:
        """Keep ``command`` in ``unit``; its row's id."""
        row_id: int = await unit.fetchval(
            "INSERT INTO command_outbox (body) VALUES ($1) RETURNING id", command.to_body()
        )
        return row_id

    async def insert_all(self, unit: Unit, commands: Sequence[Resend]) -> list[int]:
        """Keep many commands in ``unit`` with one statement; their rows' ids, in order."""
        rows = await unit.fetch(
            """INSERT INTO command_outbox (body)
               SELECT body FROM unnest($1::bytea[]) WITH ORDINALITY AS c(body, i) ORDER BY i
               RETURNING id""",
            [command.to_body() for command in commands],
        )
        # Ids are drawn in insertion order, which the ORDER BY fixes: sorted, they pair up.
        return sorted(row["id"] for row in rows)

    async def delete(self, row_ids: Sequence[int], q: Queries | None = None) -> None:
        await (q or self._db).execute(
            "DELETE FROM command_outbox WHERE id = ANY($1::bigint[])", list(row_ids)
        )

    async def lock_older(
        self, unit: Unit, older_than_ms: int, limit: int
    ) -> list[tuple[int, Resend]]:
        """Rows staged before ``older_than_ms``, oldest first, locked until ``unit`` ends
        (those another scheduler holds are skipped)."""
        rows = await unit.fetch(
            """SELECT id, body FROM command_outbox WHERE created_at < $1
               ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED""",
            to_dt(older_than_ms),
            limit,
        )
        return [(row["id"], Resend.from_body(row["body"])) for row in rows]
