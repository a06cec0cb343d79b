"""A pool on a two-host URL with ``target_session_attrs=read-write`` follows a failover by
itself: while the primary is dead and the standby not yet promoted it is unavailable (so
``/ready`` is 503), and once the standby is promoted the same pool writes again, on it, with
every commit made before the primary died. A private primary with a synchronous standby."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from harness.ports import wait_refused
from harness.servers.postgres import PostgresPair
from svc.db import open_database
from svc.errors import Unavailable


def _missing() -> list[str]:
    tools = ("initdb", "pg_basebackup", "pg_ctl")
    return [
        tool
        for tool in tools
        if not list(Path("/usr/lib/postgresql").glob(f"*/bin/{tool}")) and not shutil.which(tool)
    ]


@pytest.mark.servers
@pytest.mark.timeout(90)
async def test_the_pool_writes_on_the_promoted_standby_without_a_restart() -> None:
    if missing := _missing():
        message = f"needs the PostgreSQL server tools: {', '.join(missing)}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    pair = PostgresPair()
    try:
        await asyncio.to_thread(pair.start)
        async with open_database(pair.url("postgres"), 2, wait=10, acquire_timeout=2) as db:
            await db.execute("CREATE TABLE paid (id int PRIMARY KEY)")
            await db.execute("INSERT INTO paid VALUES (1)")  # answered: the standby has it
            assert await db.fetchval("SELECT inet_server_port()") == pair.primary.port

            await asyncio.to_thread(pair.primary.kill)
            await wait_refused(pair.primary.port, 10)
            assert not await db.ping(), "no primary: not ready"
            with pytest.raises(Unavailable):
                await db.execute("INSERT INTO paid VALUES (2)")

            await asyncio.to_thread(pair.standby.promote)
            await db.execute("INSERT INTO paid VALUES (3)")
            assert await db.ping()
            assert await db.fetchval("SELECT inet_server_port()") == pair.standby.port
            assert [r["id"] for r in await db.fetch("SELECT id FROM paid ORDER BY id")] == [1, 3]
    finally:
        await asyncio.to_thread(pair.remove)
