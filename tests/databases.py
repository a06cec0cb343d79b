"""The databases of one test run: a migrated template, and a copy of it per test.

A copy takes PostgreSQL about 0.4 s, mostly waiting for its WAL to reach the disk, so each
test process has the next few made ahead by a thread of its own while its tests run, and
drops used ones there too: a test waits for its database only when tests come faster.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from harness.database import admin_execute, create_migrated, drop_database


class Databases:
    """Databases of one test run, all named ``<prefix>_…``."""

    AHEAD = 2
    """Copies kept made ahead, beyond the one being handed out."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url
        self.prefix = f"svct_{uuid.uuid4().hex[:10]}"
        self.template = f"{self.prefix}_tpl"
        self._count = 0
        self._maker = ThreadPoolExecutor(1, thread_name_prefix="databases")
        self._ahead: deque[Future[str]] = deque()

    def url(self, name: str) -> str:
        """The URL of database ``name`` on the admin URL's server."""
        return urlunsplit(urlsplit(self.admin_url)._replace(path=f"/{name}"))

    async def make_template(self) -> None:
        await create_migrated(self.admin_url, self.template)

    def _copy(self, name: str) -> str:
        statement = f'CREATE DATABASE "{name}" TEMPLATE "{self.template}"'
        asyncio.run(admin_execute(self.admin_url, statement))
        return self.url(name)

    async def create(self) -> str:
        """A fresh copy of the template, for one test."""
        while len(self._ahead) <= self.AHEAD:
            self._count += 1
            self._ahead.append(self._maker.submit(self._copy, f"{self.prefix}_{self._count}"))
        return await asyncio.wrap_future(self._ahead.popleft())

    def _drop(self, name: str) -> None:
        asyncio.run(drop_database(self.admin_url, name))

    def drop(self, url: str) -> None:
        """Drop a test's database in the background (``drop_all`` takes any left)."""
        self._maker.submit(self._drop, urlsplit(url).path.lstrip("/"))

    async def drop_all(self) -> None:
        self._maker.shutdown(cancel_futures=True)
        conn = await asyncpg.connect(self.admin_url, timeout=10)
        try:
            names = await conn.fetch(
                "SELECT datname FROM pg_database WHERE datname LIKE $1", self.prefix + "\\_%"
            )
        finally:
            await conn.close()
        for row in names:
            await drop_database(self.admin_url, row["datname"])
