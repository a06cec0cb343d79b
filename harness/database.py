"""The run's own PostgreSQL database: created fresh and migrated at the start, dropped at the end.

The admin URL (a role that may create databases) comes from ``SVC_BENCH_DATABASE_URL``, else
``SVC_TEST_DATABASE_URL``, else the local server. Nothing else on the server is touched.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from svc.db.migrate import migrate

log = logging.getLogger(__name__)

LOCAL_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def admin_url(environ: Mapping[str, str] | None = None) -> str:
    """Where to create the run's database."""
    env = os.environ if environ is None else environ
    return env.get("SVC_BENCH_DATABASE_URL") or env.get("SVC_TEST_DATABASE_URL") or LOCAL_ADMIN_URL


def with_database(url: str, name: str) -> str:
    """``url`` pointing at database ``name``."""
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


async def _admin(url: str, statement: str) -> None:
    conn = await asyncpg.connect(url, timeout=10)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


@asynccontextmanager
async def bench_database(admin: str) -> AsyncIterator[str]:
    """A new migrated database ``svcbench_<random>``; yields its URL, drops it on exit."""
    name = f"svcbench_{uuid.uuid4().hex[:10]}"
    await _admin(admin, f'CREATE DATABASE "{name}"')
    url = with_database(admin, name)
    try:
        conn = await asyncpg.connect(url, timeout=10)
        try:
            await migrate(conn)
        finally:
            await conn.close()
        log.info("database %s created and migrated", name)
        yield url
    finally:
        # FORCE: a role process killed mid-run may still hold a connection.
        await _admin(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        log.info("database %s dropped", name)


async def server_version(url: str) -> str:
    """The PostgreSQL server's version, e.g. ``15.20``."""
    conn = await asyncpg.connect(url, timeout=10)
    try:
        return str(await conn.fetchval("SHOW server_version")).split(" ", 1)[0]
    finally:
        await conn.close()
