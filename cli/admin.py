"""Administrative commands: migrations, prices, organisations, terminals, secret keys."""

from __future__ import annotations

import logging

import orjson

from svc.crypto import SecretBox
from svc.db import open_database
from svc.db.migrate import check_current, migrate
from svc.money.model.pricing import Pricing, configured
from svc.money.store.tariffs import Tariffs
from svc.orgs import Scope
from svc.orgs.store import Organisations
from svc.settings import Settings
from svc.terminal.store import Terminals
from svc.webhooks.store import Endpoints

log = logging.getLogger(__name__)


async def run_migrations(settings: Settings) -> list[str]:
    """Apply pending migrations (waits up to a minute for PostgreSQL); returns their names.
    A migration's statements run without a time limit (an index on a big table takes long)."""
    async with open_database(settings.database_url, 1, statement_timeout=0) as db:
        async with db.pool.acquire() as conn:
            return await migrate(conn)


async def set_pricing(settings: Settings, org: str, rates: str, reset: bool) -> str:
    """Give ``org`` its own ``rates`` (``kind=rate,…``; after a ``reset`` to the defaults);
    returns what it pays now. With neither, only shows it: an unknown organisation is then a
    ValueError, never created."""
    changes = Pricing.parse(rates, complete=False)  # a ValueError before anything changes
    async with open_database(settings.database_url, 2, wait=10) as db:
        async with db.transaction() as unit:
            await check_current(unit.conn)
            orgs, tariffs = Organisations(db), Tariffs(db)
            if rates or reset:
                org_id = await orgs.ensure(org, unit)
            elif (found := await orgs.id_of(org, unit)) is not None:
                org_id = found
            else:
                raise ValueError(f"there is no organisation called {org!r} (see svc orgs list)")
            if reset:
                await tariffs.reset(unit, org_id)
            await tariffs.set_rates(unit, org_id, changes)
            prices = await tariffs.pricing_of(configured(settings.pricing), org_id, unit)
    return prices.text


async def list_orgs(settings: Settings) -> list[tuple[str, str]]:
    async with open_database(settings.database_url, 1, wait=10) as db:
        return await Organisations(db).listing()


async def create_terminal(settings: Settings, env: str, org: str, name: str) -> str:
    async with open_database(settings.database_url, 2, wait=10) as db:
        org_id = await Organisations(db).ensure(org)
        terminal, secret = await Terminals(db).register(Scope(org_id, env), name)
    return orjson.dumps({"id": terminal.id, "secret": secret}).decode()


async def reencrypt(settings: Settings) -> int:
    """Re-encrypt what endpoints keep sealed (signing secrets, previous ones of rotations,
    custom headers, client keys, RabbitMQ passwords) under the first key of ``SVC_SECRET_KEY``."""
    box = SecretBox.parse(settings.secret_key)
    async with open_database(settings.database_url, 1, wait=10) as db:
        return await Endpoints(db, box).reseal()
