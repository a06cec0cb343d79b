"""The database's time limits: PostgreSQL cancels a statement past
``SVC_DATABASE_STATEMENT_TIMEOUT`` and a unit of work gives up waiting for a connection after
``SVC_DATABASE_ACQUIRE_TIMEOUT``; both are ``Unavailable`` (a 503 to an API client), and the
pool serves again right after. Migrations run without a statement limit."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest

from cli.admin import run_migrations
from svc.context import open_context
from svc.db import open_database
from svc.errors import Unavailable
from svc.settings import Settings


async def test_a_statement_past_the_limit_is_cancelled_by_postgresql(database_url: str) -> None:
    async with open_database(database_url, 2, statement_timeout=0.3) as db:
        assert await db.fetchval("SHOW statement_timeout") == "300ms"
        started = time.monotonic()
        with pytest.raises(Unavailable, match="postgresql"):
            async with db.transaction() as unit:
                await unit.execute("SELECT pg_sleep(5)")
        assert time.monotonic() - started < 2
        assert await db.fetchval("SELECT 1") == 1, "the pool serves on"


async def test_no_statement_limit_when_zero(database_url: str) -> None:
    async with open_database(database_url, 1, statement_timeout=0) as db:
        assert await db.fetchval("SHOW statement_timeout") == "0"


async def test_waiting_for_a_connection_ends_after_the_acquire_timeout(database_url: str) -> None:
    async with open_database(database_url, 1, acquire_timeout=0.3) as db:
        async with db.connection():  # the only connection is taken
            started = time.monotonic()
            with pytest.raises(Unavailable, match="postgresql"):
                async with db.transaction():
                    pass
            assert 0.25 < time.monotonic() - started < 2
        assert await db.fetchval("SELECT 1") == 1


async def test_the_roles_take_both_limits_from_settings(settings: Settings) -> None:
    own = replace(settings, database_statement_timeout=1.5, database_acquire_timeout=0.75)
    async with open_context(own) as ctx:
        assert await ctx.db.fetchval("SHOW statement_timeout") == "1500ms"
        assert ctx.db.acquire_timeout == 0.75


async def test_migrations_run_without_a_statement_limit(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []

    async def migrate(conn: object) -> list[str]:
        seen.append(await conn.fetchval("SHOW statement_timeout"))  # type: ignore[attr-defined]
        return []

    monkeypatch.setattr("cli.admin.migrate", migrate)
    await asyncio.wait_for(run_migrations(settings), 30)
    assert seen == ["0"]


def test_settings_read_both_limits() -> None:
    env = {"SVC_DATABASE_STATEMENT_TIMEOUT": "0", "SVC_DATABASE_ACQUIRE_TIMEOUT": "250ms"}
    settings = Settings.from_env(env)
    assert settings.database_statement_timeout == 0.0
    assert settings.database_acquire_timeout == 0.25
    defaults = Settings()
    assert (defaults.database_statement_timeout, defaults.database_acquire_timeout) == (30.0, 5.0)
    with pytest.raises(ValueError, match="SVC_DATABASE_ACQUIRE_TIMEOUT"):
        Settings.from_env({"SVC_DATABASE_ACQUIRE_TIMEOUT": "0"})
    with pytest.raises(ValueError, match="SVC_DATABASE_STATEMENT_TIMEOUT"):
        Settings.from_env({"SVC_DATABASE_STATEMENT_TIMEOUT": "-1"})
