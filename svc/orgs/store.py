"""Organisations in PostgreSQL (their API keys: ``svc.orgs.keys``)."""

from __future__ import annotations

from collections.abc import Sequence

from svc.db import Database, Queries
from svc.ids import new_id


class Organisations:
    """Organisations by name; the id is made on first use."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def ensure(self, name: str, q: Queries | None = None) -> str:
        """The id of the organisation called ``name``, created if it does not exist."""
        for _ in range(3):  # a concurrent creator may commit between our insert and read
            found = await (q or self._db).fetchval(
                """WITH made AS (
                       INSERT INTO organisations (id, name) VALUES ($1, $2)
                       ON CONFLICT (name) DO NOTHING RETURNING id)
                   SELECT id FROM made UNION ALL SELECT id FROM organisations WHERE name = $2
                   LIMIT 1""",
                new_id("org"),
                name,
            )
            if found is not None:
                return str(found)
        raise RuntimeError(f"organisation {name!r} could not be created or found")

    async def id_of(self, name: str, q: Queries | None = None) -> str | None:
        """The id of the organisation called ``name``, or None when there is none."""
        found = await (q or self._db).fetchval("SELECT id FROM organisations WHERE name = $1", name)
        return None if found is None else str(found)

    async def existing(self, ids: Sequence[str]) -> set[str]:
        """Those of ``ids`` that name an organisation (one query)."""
        rows = await self._db.fetch(
            "SELECT id FROM organisations WHERE id = ANY($1::text[])", list(ids)
        )
        return {str(row["id"]) for row in rows}

    async def name_of(self, org_id: str) -> str | None:
        found = await self._db.fetchval("SELECT name FROM organisations WHERE id = $1", org_id)
        return None if found is None else str(found)

    async def listing(self) -> list[tuple[str, str]]:
        """``(id, name)`` of every organisation, oldest first."""
        rows = await self._db.fetch("SELECT id, name FROM organisations ORDER BY created_at, id")
        return [(str(row["id"]), str(row["name"])) for row in rows]
