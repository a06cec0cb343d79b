"""PostgreSQL for tests: one migrated template per run, one database per test made from it.

A database made from a template costs tens of milliseconds, so every test that runs the
service gets its own: nothing is shared between tests and nothing needs flushing.
"""

from __future__ import annotations

import uuid
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from svc.db.migrate import migrate

LOCAL_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def with_database(url: str, name: str) -> str:
    """``url`` pointing at database ``name``."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


async def create_migrated(admin_url: str, name: str = "svc") -> str:
    """Create database ``name`` on the server of ``admin_url`` (a private one, say), migrate
    it, and return its URL."""
    admin = await asyncpg.connect(admin_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    url = with_database(admin_url, name)
    conn = await asyncpg.connect(url)
    try:
        await migrate(conn)
    finally:
        await conn.close()
    return url


class Databases:
    """Databases of one test run, all named ``<prefix>_…`` and dropped at the end."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url
        self.prefix = f"svct_{uuid.uuid4().hex[:10]}"
        self.template = f"{self.prefix}_tpl"
        self._count = 0

    async def _admin(self) -> asyncpg.Connection:
        return await asyncpg.connect(self.admin_url, timeout=10)

    async def make_template(self) -> None:
        admin = await self._admin()
        try:
            await admin.execute(f'CREATE DATABASE "{self.template}"')
        finally:
            await admin.close()
        conn = await asyncpg.connect(with_database(self.admin_url, self.template), timeout=10)
        try:
            await migrate(conn)
        finally:
            await conn.close()

    async def create(self) -> str:
        """A new migrated database; returns its URL."""
        self._count += 1
        name = f"{self.prefix}_{self._count}"
        admin = await self._admin()
        try:
            await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{self.template}"')
        finally:
            await admin.close()
        return with_database(self.admin_url, name)

    async def drop(self, url: str) -> None:
        name = urlsplit(url).path.lstrip("/")
        admin = await self._admin()
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()

    async def drop_all(self) -> None:
        admin = await self._admin()
        try:
            names = await admin.fetch(
                "SELECT datname FROM pg_database WHERE datname LIKE $1", self.prefix + "\\_%"
            )
            for row in names:
                await admin.execute(f'DROP DATABASE IF EXISTS "{row["datname"]}" WITH (FORCE)')
        finally:
            await admin.close()
