"""Fresh migrated databases of a run's own, created and dropped on the server of an admin URL."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from svc.db.migrate import migrate

log = logging.getLogger(__name__)

LOCAL_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def admin_url() -> str:
    """Where to create the run's databases (as a role that may create them)."""
    env = os.environ
    return env.get("SVC_BENCH_DATABASE_URL") or env.get("SVC_TEST_DATABASE_URL") or LOCAL_ADMIN_URL


async def admin_execute(url: str, statement: str) -> None:
    conn = await asyncpg.connect(url, timeout=10)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


async def drop_database(admin: str, name: str) -> None:
    # FORCE: a role process killed mid-run may still hold a connection.
    await admin_execute(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def create_migrated(admin: str, name: str = "svc") -> str:
    """Create and migrate database ``name`` on the server of ``admin``; returns its URL."""
    await admin_execute(admin, f'CREATE DATABASE "{name}"')
    url = urlunsplit(urlsplit(admin)._replace(path=f"/{name}"))
    conn = await asyncpg.connect(url, timeout=10)
    try:
        await migrate(conn)
    finally:
        await conn.close()
    return url


@asynccontextmanager
async def bench_database(admin: str) -> AsyncIterator[str]:
    """A new migrated database ``svcbench_<random>``; yields its URL, drops it on exit."""
    name = f"svcbench_{uuid.uuid4().hex[:10]}"
    try:
        url = await create_migrated(admin, name)
        log.info("database %s created and migrated", name)
        yield url
    finally:
        await drop_database(admin, name)
        log.info("database %s dropped", name)


async def server_version(url: str) -> str:
    """The PostgreSQL server's version, e.g. ``15.20``."""
    conn = await asyncpg.connect(url, timeout=10)
    try:
        return str(await conn.fetchval("SHOW server_version")).split(" ", 1)[0]
    finally:
        await conn.close()
