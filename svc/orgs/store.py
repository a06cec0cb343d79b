"""Organisations and API keys in PostgreSQL; keys are stored as SHA-256 digests only."""

from __future__ import annotations

from collections.abc import Sequence

from svc.crypto import digest
from svc.db import Database, Queries
from svc.ids import new_id, new_secret
from svc.orgs.model import KEY_PREFIXES, READABLE_PREFIX, Scope, environment_of


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


class ApiKeys:
    """Creates and resolves API keys."""

    def __init__(self, db: Database, orgs: Organisations) -> None:
        self._db = db
        self._orgs = orgs

    async def create(self, env: str, org_name: str = "default") -> tuple[str, Scope]:
        """A new key for ``env`` in organisation ``org_name``; the key is returned only here."""
        if env not in KEY_PREFIXES:
            raise ValueError(f"environment must be test or live, not {env!r}")
        async with self._db.transaction() as unit:
            org = await self._orgs.ensure(org_name, unit)
            key = new_secret(KEY_PREFIXES[env])
            await unit.execute(
                "INSERT INTO api_keys (digest, prefix, org_id, env) VALUES ($1, $2, $3, $4)",
                digest(key),
                key[:READABLE_PREFIX],
                org,
                env,
            )
        return key, Scope(org, env)

    async def resolve(self, key: str) -> Scope | None:
        """The scope of ``key``, or None when it is unknown or does not match its prefix."""
        env = environment_of(key)
        if env is None:
            return None
        row = await self._db.fetchrow(
            "SELECT org_id, env FROM api_keys WHERE digest = $1", digest(key)
        )
        if row is None or row["env"] != env:
            return None
        return Scope(str(row["org_id"]), env)
