"""API keys in PostgreSQL: made with a name and permissions, listed, rolled and revoked."""

from __future__ import annotations

import asyncio
import time

import pytest

from svc.context import Context
from svc.ids import has_prefix
from svc.keys.errors import InvalidPermission
from svc.keys.model import FULL_ACCESS, allows, beyond, parse_permissions
from svc.keys.store import make_key
from svc.orgs import Scope


async def test_a_key_is_a_record_with_a_secret_shown_once(ctx: Context) -> None:
    secret, scope = await ctx.api_keys.create("live", "keys-org", "till 3", ("payments:write",))
    found = await ctx.api_keys.authenticate(secret)
    assert found is not None and found.until_ms is None
    key = found.key
    assert has_prefix(key.id, "key") and key.scope == scope and scope.env == "live"
    view = key.public()
    assert view["object"] == "api_key" and view["name"] == "till 3"
    assert view["prefix"] == secret[:12] and secret.startswith("svc_live_")
    assert view["permissions"] == ["payments:write"] and view["revoked_at"] is None
    assert secret not in str(view)
    assert await ctx.api_keys.resolve(secret[:-1] + ("x" if secret[-1] != "x" else "y")) is None


async def test_keys_are_listed_newest_first_within_their_scope(ctx: Context) -> None:
    _, scope = await ctx.api_keys.create("test", "lister")
    async with ctx.unit() as unit:
        made = [(await make_key(unit, scope, f"k{i}"))[1] for i in range(3)]
    await ctx.api_keys.create("live", "lister")
    page, cursor = await ctx.api_keys.page(scope, 2, None)
    rest, end = await ctx.api_keys.page(scope, 2, cursor)
    names = [key.name for key in page + rest]
    assert names == ["k2", "k1", "k0", ""] and end is None
    assert await ctx.api_keys.get(made[0].id, scope) == made[0]
    assert await ctx.api_keys.get(made[0].id, Scope(scope.org, "live")) is None


async def test_a_rolled_key_keeps_its_previous_secret_until_it_expires(ctx: Context) -> None:
    old, scope = await ctx.api_keys.create("test", "roller")
    found = await ctx.api_keys.authenticate(old)
    assert found is not None
    async with ctx.unit() as unit:
        rolled = await ctx.api_keys.roll(unit, found.key.id, 1, scope)
    assert rolled is not None
    new, key = rolled
    assert new != old and key.id == found.key.id and key.prefix == new[:12]
    previous = await ctx.api_keys.authenticate(old)
    assert previous is not None and previous.until_ms is not None
    assert previous.until_ms <= time.time() * 1000 + 1_100
    assert await ctx.api_keys.resolve(new) == scope
    await asyncio.sleep(1.1)
    assert await ctx.api_keys.resolve(old) is None
    assert await ctx.api_keys.resolve(new) == scope
    async with ctx.unit() as unit:
        again = await ctx.api_keys.roll(unit, key.id, 0, scope)
    assert again is not None
    assert await ctx.api_keys.resolve(new) is None and await ctx.api_keys.resolve(again[0]) == scope


async def test_a_revoked_or_expired_key_resolves_to_nothing(ctx: Context) -> None:
    secret, scope = await ctx.api_keys.create("test", "revoker")
    found = await ctx.api_keys.authenticate(secret)
    assert found is not None
    async with ctx.unit() as unit:
        other = await ctx.api_keys.revoke(unit, found.key.id, Scope("org_other", "test"))
        revoked = await ctx.api_keys.revoke(unit, found.key.id, scope)
    assert other is None and revoked is not None and revoked.revoked_ms is not None
    assert await ctx.api_keys.resolve(secret) is None
    async with ctx.unit() as unit:
        assert await ctx.api_keys.roll(unit, found.key.id, 0, scope) is None
        again = await ctx.api_keys.revoke(unit, found.key.id, scope)
    assert again is not None and again.revoked_ms == revoked.revoked_ms
    soon = int(time.time() * 1000) + 300
    expiring, _ = await ctx.api_keys.create("test", "revoker", expires_ms=soon)
    assert await ctx.api_keys.resolve(expiring) == scope
    await asyncio.sleep(0.4)
    assert await ctx.api_keys.resolve(expiring) is None


async def test_last_use_is_kept_to_the_minute(ctx: Context) -> None:
    secret, _ = await ctx.api_keys.create("test", "toucher")
    found = await ctx.api_keys.authenticate(secret)
    assert found is not None and found.key.last_used_ms is None
    await ctx.api_keys.touch(found.key.id)
    used = await ctx.api_keys.get(found.key.id)
    assert used is not None and used.last_used_ms is not None
    assert used.last_used_ms % 60_000 == 0 and time.time() * 1000 - used.last_used_ms < 61_000


def test_permissions_write_implies_read_and_a_key_gives_no_more_than_it_has() -> None:
    granted = parse_permissions(["payments:write", "events:read", "payments:write"])
    assert granted == ("events:read", "payments:write")
    assert allows(granted, "payments:read") and allows(granted, "payments:write")
    assert allows(granted, "events:read") and not allows(granted, "events:write")
    assert not allows(granted, "refunds:read") and allows(None, "api_keys:write")
    assert beyond(("payments:read",), granted) is None and beyond(granted, None) is None
    assert beyond(None, granted) == FULL_ACCESS
    assert beyond(("events:read", "refunds:read"), granted) == "refunds:read"
    for bad in ("payments", "payments:delete", "cards:read", "Payments:read"):
        with pytest.raises(InvalidPermission) as raised:
            parse_permissions([bad])
        assert raised.value.permission == bad
