"""Fresh migrated databases of a run's own: one per benchmark run, one per test, off a template."""

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


def with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


async def _admin(url: str, statement: str) -> None:
    conn = await asyncpg.connect(url, timeout=10)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


async def _drop(admin: str, name: str) -> None:
    # FORCE: a role process killed mid-run may still hold a connection.
    await _admin(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def create_migrated(admin: str, name: str = "svc") -> str:
    """Create and migrate database ``name`` on the server of ``admin``; returns its URL."""
    await _admin(admin, f'CREATE DATABASE "{name}"')
    url = with_database(admin, name)
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
        await _drop(admin, name)
        log.info("database %s dropped", name)


async def server_version(url: str) -> str:
    """The PostgreSQL server's version, e.g. ``15.20``."""
    conn = await asyncpg.connect(url, timeout=10)
    try:
        return str(await conn.fetchval("SHOW server_version")).split(" ", 1)[0]
    finally:
        await conn.close()


class Databases:
    """Databases of one test run, all named ``<prefix>_…``."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url
        self.prefix = f"svct_{uuid.uuid4().hex[:10]}"
        self.template = f"{self.prefix}_tpl"
        self._count = 0

    async def make_template(self) -> None:
        await create_migrated(self.admin_url, self.template)

    async def create(self) -> str:
        self._count += 1
        name = f"{self.prefix}_{self._count}"
        await _admin(self.admin_url, f'CREATE DATABASE "{name}" TEMPLATE "{self.template}"')
        return with_database(self.admin_url, name)

    async def drop(self, url: str) -> None:
        await _drop(self.admin_url, urlsplit(url).path.lstrip("/"))

    async def drop_all(self) -> None:
        conn = await asyncpg.connect(self.admin_url, timeout=10)
        try:
            names = await conn.fetch(
                "SELECT datname FROM pg_database WHERE datname LIKE $1", self.prefix + "\\_%"
            )
        finally:
            await conn.close()
        for row in names:
            await _drop(self.admin_url, row["datname"])
