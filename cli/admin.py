"""Administrative commands: migrations, keys, organisations, terminals, secret keys."""

from __future__ import annotations

import logging

import orjson

from svc.crypto import SecretBox
from svc.db import open_database
from svc.db.migrate import check_current, migrate
from svc.orgs import Scope
from svc.orgs.store import ApiKeys, Organisations
from svc.settings import Settings
from svc.terminal.store import Terminals

log = logging.getLogger(__name__)


async def run_migrations(settings: Settings) -> list[str]:
    """Apply pending migrations (waits up to a minute for PostgreSQL); returns their names."""
    async with open_database(settings.database_url, 1) as db:
        async with db.pool.acquire() as conn:
            return await migrate(conn)


async def create_key(settings: Settings, env: str, org: str) -> tuple[str, Scope]:
    async with open_database(settings.database_url, 2, wait=10) as db:
        async with db.connection() as unit:
            await check_current(unit.conn)
        return await ApiKeys(db, Organisations(db)).create(env, org)


async def list_orgs(settings: Settings) -> list[tuple[str, str]]:
    async with open_database(settings.database_url, 1, wait=10) as db:
        return await Organisations(db).listing()


async def create_terminal(settings: Settings, env: str, org: str, name: str) -> str:
    async with open_database(settings.database_url, 2, wait=10) as db:
        org_id = await Organisations(db).ensure(org)
        terminal, secret = await Terminals(db).register(Scope(org_id, env), name)
    return orjson.dumps({"id": terminal.id, "secret": secret}).decode()


async def reencrypt(settings: Settings) -> int:
    """Re-encrypt every stored signing secret under the first key of ``SVC_SECRET_KEY``."""
    box = SecretBox.parse(settings.secret_key)
    count = 0
    async with open_database(settings.database_url, 1, wait=10) as db:
        async with db.transaction() as unit:
            rows = await unit.fetch(
                "SELECT id, secret, secret_key_id FROM webhook_endpoints "
                "WHERE secret_key_id <> $1 FOR UPDATE",
                box.current,
            )
            for row in rows:
                plain = box.open(row["secret_key_id"], bytes(row["secret"]), row["id"])
                key_id, sealed = box.seal(plain, row["id"])
                await unit.execute(
                    "UPDATE webhook_endpoints SET secret = $2, secret_key_id = $3 WHERE id = $1",
                    row["id"],
                    sealed,
                    key_id,
                )
                count += 1
    return count
