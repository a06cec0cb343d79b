"""``svc keys``: make, list, roll and revoke API keys from a shell on a server."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import orjson
from redis.asyncio import Redis

from svc.db import Database, open_database
from svc.db.migrate import check_current
from svc.keys import flow
from svc.keys.errors import InvalidPermission
from svc.keys.model import MAX_EXPIRE_PREVIOUS, RESOURCES, ApiKey, parse_permissions
from svc.keys.store import ApiKeys, KeyChanges
from svc.orgs.model import Scope
from svc.orgs.store import Organisations
from svc.rediskeys import Keys
from svc.settings import Settings

COLUMNS = ("id", "environment", "prefix", "name", "permissions", "created_at", "last_used_at")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    keys = sub.add_parser("keys", help="API keys").add_subparsers(
        dest="keys_command", required=True
    )
    create = keys.add_parser("create", help="create a key and print it alone on stdout")
    create.add_argument(
        "--env",
        choices=("test", "live"),
        required=True,
        help="test makes an svc_test_ key (the sandbox), live an svc_live_ key",
    )
    create.add_argument("--org", default="default", help="organisation name (default: default)")
    create.add_argument("--name", default="", help="shown in key lists (at most 100 characters)")
    create.add_argument(
        "--permissions",
        help="a restricted key: comma-separated resource:read|write items "
        "(e.g. payments:write,refunds:read); without it the key has full access",
    )
    create.add_argument(
        "--json",
        action="store_true",
        help='print {"key", "id", "organisation_id", "environment"}',
    )
    create.add_argument(
        "--partner",
        action="store_true",
        help="make the organisation a partner (it may create connected organisations)",
    )
    listing = keys.add_parser("list", help="print the organisation's keys, newest first")
    listing.add_argument("--org", required=True, help="organisation name")
    listing.add_argument("--env", choices=("test", "live"), help="one environment only")
    listing.add_argument("--json", action="store_true", help="one JSON object per key")
    revoke = keys.add_parser("revoke", help="revoke a key: it stops working at once")
    revoke.add_argument("key_id", help="key_…")
    roll = keys.add_parser("roll", help="give a key a new secret and print it alone on stdout")
    roll.add_argument("key_id", help="key_…")
    roll.add_argument(
        "--expire-previous-in",
        type=int,
        default=0,
        metavar="SECONDS",
        help=f"the old secret keeps working this long (0 to {MAX_EXPIRE_PREVIOUS}; default 0)",
    )


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Run one ``svc keys`` command; 2 with a message on stderr when it cannot be done."""
    try:
        return asyncio.run(_COMMANDS[args.keys_command](args, settings))
    except (InvalidPermission, LookupError, ValueError) as exc:
        print(f"svc: {_message(exc)}", file=sys.stderr)
        return 2


@dataclass(frozen=True, slots=True)
class _Store:
    db: Database
    keys: ApiKeys
    changes: KeyChanges


@asynccontextmanager
async def _store(settings: Settings) -> AsyncIterator[_Store]:
    async with open_database(settings.database_url, 2, wait=10) as db:
        async with db.connection() as unit:
            await check_current(unit.conn)
        redis = Redis.from_url(settings.redis_url, socket_connect_timeout=2, socket_timeout=2)
        try:
            keys = ApiKeys(db, Organisations(db))
            yield _Store(db, keys, KeyChanges(redis, Keys(settings.namespace)))
        finally:
            await redis.aclose()


async def _create(args: argparse.Namespace, settings: Settings) -> int:
    wanted = None if args.permissions is None else _permissions(args.permissions)
    if len(args.name) > 100:
        raise ValueError("--name: at most 100 characters")
    async with _store(settings) as store:
        secret, scope = await store.keys.create(args.env, args.org, args.name, wanted)
        if args.partner:
            await Organisations(store.db).mark_partner(scope.org)
        found = await store.keys.authenticate(secret)
    if args.json:
        key_id = None if found is None else found.key.id
        body = {"key": secret, "id": key_id, "organisation_id": scope.org, "environment": scope.env}
        print(orjson.dumps(body).decode())
    else:
        print(secret)
    return 0


async def _list(args: argparse.Namespace, settings: Settings) -> int:
    async with _store(settings) as store:
        org = await Organisations(store.db).id_of(args.org)
        if org is None:
            raise LookupError(f"there is no organisation called {args.org!r} (see svc orgs list)")
        found: list[ApiKey] = []
        for env in (args.env,) if args.env else ("test", "live"):
            cursor: str | None = ""
            while cursor is not None:
                page, cursor = await store.keys.page(Scope(org, env), 100, cursor or None)
                found.extend(page)
    found.sort(key=lambda key: (key.created_ms, key.id), reverse=True)
    for key in found:
        view = key.public()
        if args.json:
            print(orjson.dumps(view).decode())
            continue
        shown = {**view, "permissions": ",".join(view["permissions"] or ["full access"])}
        state = "revoked " + view["revoked_at"] if view["revoked_at"] else ""
        print("\t".join(str(shown[column] or "-") for column in COLUMNS) + f"\t{state}".rstrip())
    return 0


async def _revoke(args: argparse.Namespace, settings: Settings) -> int:
    async with _store(settings) as store:
        async with store.db.transaction() as unit:
            revoked = await flow.revoke(unit, store.keys, store.changes, args.key_id)
        if revoked is None:
            raise LookupError(f"there is no API key {args.key_id}")
        await store.changes.announce(revoked.id)
    print(f"{revoked.id}\trevoked {revoked.public()['revoked_at']}")
    return 0


async def _roll(args: argparse.Namespace, settings: Settings) -> int:
    seconds = args.expire_previous_in
    if not 0 <= seconds <= MAX_EXPIRE_PREVIOUS:
        raise ValueError(f"--expire-previous-in: 0 to {MAX_EXPIRE_PREVIOUS} seconds")
    async with _store(settings) as store:
        async with store.db.transaction() as unit:
            rolled = await flow.roll(unit, store.keys, store.changes, args.key_id, seconds)
        if rolled is None:
            raise LookupError(f"there is no API key {args.key_id} that is not revoked")
        await store.changes.announce(args.key_id)
    print(rolled[0])
    return 0


def _permissions(text: str) -> tuple[str, ...]:
    return parse_permissions(item.strip() for item in text.split(",") if item.strip())


def _message(exc: Exception) -> str:
    if isinstance(exc, InvalidPermission):
        known = ", ".join(RESOURCES)
        return f"--permissions: {exc.permission!r} is not RESOURCE:read|write ({known})"
    return str(exc.args[0] if exc.args else exc)


_COMMANDS = {"create": _create, "list": _list, "revoke": _revoke, "roll": _roll}
