"""Migrations from empty, re-runs, concurrent runs; partitions ahead and retention by drop."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from svc.crypto import digest
from svc.db import Database
from svc.db.migrate import MigrationError, available, check_current, migrate
from svc.db.partitions import drop_expired, ensure_partitions, partition_name
from svc.db.times import to_dt
from svc.ids import has_prefix
from svc.keys.store import ApiKeys
from svc.orgs.store import Organisations
from tests.databases import Databases


@pytest.fixture
async def empty_url(databases: Databases) -> AsyncIterator[str]:
    """A database with no schema at all."""
    name = f"{databases.prefix}_empty_{uuid.uuid4().hex[:8]}"  # a drop finishes in the background
    admin = await asyncpg.connect(databases.admin_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    url = databases.url(name)
    yield url
    databases.drop(url)


async def test_from_empty_then_rerun_is_a_no_op(empty_url: str) -> None:
    conn = await asyncpg.connect(empty_url)
    try:
        with pytest.raises(MigrationError, match="svc migrate"):
            await check_current(conn)
        applied = await migrate(conn)
        assert applied == [m.name for m in available()]
        await check_current(conn)
        tables = {
            r["tablename"]
            for r in await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname='public'")
        }
        assert {"payments", "webhook_endpoints", "api_keys", "outbox", "idempotency_keys"} <= tables
        schema = await conn.fetchval("SELECT count(*) FROM pg_class")
        assert await migrate(conn) == []
        assert await conn.fetchval("SELECT count(*) FROM pg_class") == schema
    finally:
        await conn.close()


async def test_several_at_once_migrate_exactly_once(empty_url: str) -> None:
    conns = [await asyncpg.connect(empty_url) for _ in range(4)]
    try:
        results = await asyncio.gather(*(migrate(c) for c in conns))
        assert sorted(len(r) for r in results) == [0, 0, 0, len(available())]
        rows = await conns[0].fetchval("SELECT count(*) FROM schema_migrations")
        assert rows == len(available())
    finally:
        for conn in conns:
            await conn.close()


async def test_a_changed_migration_is_refused(database_url: str) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute("UPDATE schema_migrations SET checksum = 'x' WHERE version = 1")
        with pytest.raises(MigrationError, match="changed after it was applied"):
            await migrate(conn)
    finally:
        await conn.close()


async def test_partitions_ahead_and_retention_drops_whole_days(database_url: str) -> None:
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=2)
    db = Database(pool)
    try:
        today = datetime.now(UTC).date()
        async with db.transaction() as unit:
            await ensure_partitions(unit, today, days_ahead=7)
        async with db.transaction() as unit:
            assert await ensure_partitions(unit, today, days_ahead=7) == []
        old = datetime.now(UTC) - timedelta(days=1)
        await db.execute(
            "INSERT INTO events (id, org_id, env, type, created_at, body) "
            "VALUES ('evt_old', 'org_x', 'test', 'payment.created', $1, '{}')",
            old,
        )
        await db.execute(
            "INSERT INTO events (id, org_id, env, type, created_at, body) "
            "VALUES ('evt_new', 'org_x', 'test', 'payment.created', $1, '{}')",
            to_dt(int(datetime.now(UTC).timestamp() * 1000)),
        )
        # Thirty days on, with thirty days of retention: yesterday's partition is gone whole.
        later = datetime.now(UTC) + timedelta(days=30)
        async with db.transaction() as unit:
            dropped = await drop_expired(unit, 30 * 86400, now=later)
        assert partition_name("events", old.date()) in dropped
        assert partition_name("delivery_attempts", old.date()) in dropped
        assert partition_name("events", today) not in dropped
        ids = {r["id"] for r in await db.fetch("SELECT id FROM events")}
        assert ids == {"evt_new"}
    finally:
        await pool.close()


async def test_keys_made_before_key_records_get_ids_and_keep_working(empty_url: str) -> None:
    conn = await asyncpg.connect(empty_url)
    try:
        await migrate(conn, through=6)
        await conn.execute("INSERT INTO organisations (id, name) VALUES ('org_old', 'old')")
        secrets = ["svc_test_legacy-one", "svc_live_legacy-two"]
        for secret in secrets:
            await conn.execute(
                "INSERT INTO api_keys (digest, prefix, org_id, env) VALUES ($1, $2, 'org_old', $3)",
                digest(secret),
                secret[:12],
                secret.split("_")[1],
            )
        assert [name for name in await migrate(conn) if name.startswith("0007")]
    finally:
        await conn.close()
    pool = await asyncpg.create_pool(empty_url, min_size=1, max_size=2)
    try:
        db = Database(pool)
        keys = ApiKeys(db, Organisations(db))
        found = [await keys.authenticate(secret) for secret in secrets]
        ids = {f.key.id for f in found if f is not None}
        assert len(ids) == 2 and all(has_prefix(key_id, "key") for key_id in ids)
        assert [f.key.scope.env for f in found if f is not None] == ["test", "live"]
    finally:
        await pool.close()
