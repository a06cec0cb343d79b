"""Schema migrations: versioned SQL files applied in order, once, under an advisory lock.

Files are ``svc/db/migrations/NNNN_name.sql``. Each runs in its own transaction and is
recorded in ``schema_migrations`` with a checksum; a file changed after it was applied is
an error rather than a silent drift. Several processes migrating at once queue on the lock,
so the schema is migrated exactly once.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from importlib import resources

import asyncpg

from svc.db.database import Unit
from svc.db.partitions import ensure_partitions

log = logging.getLogger(__name__)

LOCK_ID = 0x5356_435F_4D49_4752 - (1 << 63)  # "SVC_MIGR", as a signed bigint
_NAME = re.compile(r"([0-9]{4})_[a-z0-9_]+\.sql")


class MigrationError(RuntimeError):
    """The database's schema does not match the migrations this code ships."""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def available() -> list[Migration]:
    """The migrations shipped with this code, in order."""
    folder = resources.files("svc.db") / "migrations"
    found = []
    for entry in folder.iterdir():
        match = _NAME.fullmatch(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), entry.name, entry.read_text("utf-8")))
    return sorted(found, key=lambda m: m.version)


async def migrate(conn: asyncpg.Connection, *, through: int | None = None) -> list[str]:
    """Apply every migration not applied yet, or only those up to version ``through`` (a
    schema as an older release left it); returns their names (empty: nothing to do)."""
    await conn.execute("SELECT pg_advisory_lock($1)", LOCK_ID)
    try:
        await conn.execute(
            """CREATE TABLE IF NOT EXISTS schema_migrations (
                   version     integer PRIMARY KEY,
                   name        text NOT NULL,
                   checksum    text NOT NULL,
                   applied_at  timestamptz NOT NULL DEFAULT now())"""
        )
        applied = await _applied(conn)
        done = []
        for migration in available():
            if through is not None and migration.version > through:
                break
            if migration.version in applied:
                _check_unchanged(migration, applied[migration.version])
                continue
            async with conn.transaction():
                await conn.execute(migration.sql)
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                    migration.version,
                    migration.name,
                    migration.checksum,
                )
            log.info("applied migration %s", migration.name)
            done.append(migration.name)
        async with conn.transaction():
            await ensure_partitions(Unit(conn))
        return done
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", LOCK_ID)


async def check_current(conn: asyncpg.Connection) -> None:
    """Raise MigrationError unless every shipped migration has been applied."""
    exists = await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL")
    applied = await _applied(conn) if exists else {}
    missing = [m.name for m in available() if m.version not in applied]
    if missing:
        raise MigrationError(
            f"the database schema is behind this code (missing {', '.join(missing)}); "
            "run `svc migrate` first"
        )


async def _applied(conn: asyncpg.Connection) -> dict[int, str]:
    rows = await conn.fetch("SELECT version, checksum FROM schema_migrations")
    return {int(row["version"]): str(row["checksum"]) for row in rows}


def _check_unchanged(migration: Migration, checksum: str) -> None:
    if checksum != migration.checksum:
        raise MigrationError(f"migration {migration.name} was changed after it was applied")
