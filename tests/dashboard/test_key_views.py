"""Developer → API keys: the list, creating a key (its secret shown once, and working against
the API), rolling a key's secret with the old one kept working as chosen, revoking after a
confirmation, and another scope's keys out of reach."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import aiohttp
import pytest

from api.dashboard.sessions import COOKIE
from svc.context import Context
from svc.keys.model import ApiKey, Permissions
from svc.keys.store import make_key
from svc.orgs import Scope
from tests.conftest import Api, Running
from tests.dashboard.a11y import problems
from tests.dashboard.conftest import MakeDashboard

# A minute's cache of resolved keys: only the dashboard's notice can make the API drop a key.
pytestmark = [pytest.mark.roles("api"), pytest.mark.settings(api_key_cache_ttl=60.0)]
KEYS = "/dashboard/api_keys"
ROW = re.compile(r'<tr class="key( revoked)?" data-key-id="(key_\w+)">')
SECRET = re.compile(r'<code id="secret">(svc_test_[^<]+)</code>')


@pytest.fixture
async def http(service: Running) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=service.base_url) as session:
        yield session


async def _status(http: aiohttp.ClientSession, secret: str, path: str = "/v1/api_keys") -> int:
    return (await Api(http, secret).call("GET", path))[0]


async def _refused_within_a_second(http: aiohttp.ClientSession, secret: str) -> None:
    """The API answers 401 to ``secret`` within a second: every API process dropped it."""
    started = time.monotonic()
    while await _status(http, secret) != 401:
        assert time.monotonic() - started < 1.0, "the API still takes the key after 1 s"
        await asyncio.sleep(0.05)


async def _unchanged(ctx: Context, key: ApiKey) -> bool:
    """Neither rolled nor revoked since ``key`` was read (its last use aside)."""
    stored = await ctx.api_keys.get(key.id)
    return stored is not None and (stored.prefix, stored.revoked_ms) == (key.prefix, None)


def _secret(text: str) -> str:
    found = SECRET.search(text)
    assert found is not None, "no secret on this page"
    return found.group(1)


def _rows(text: str) -> list[tuple[str, bool]]:
    """The listed keys' ids, newest first, each with whether it shows as revoked."""
    return [(key_id, bool(revoked)) for revoked, key_id in ROW.findall(text)]


async def _session_scope(ctx: Context, key: str) -> Scope:
    scope = await ctx.api_keys.resolve(key)
    assert scope is not None
    return scope


async def _key(
    ctx: Context,
    scope: Scope,
    name: str,
    permissions: Permissions = None,
    expires_ms: int | None = None,
) -> tuple[str, ApiKey]:
    async with ctx.unit() as unit:
        return await make_key(unit, scope, name, permissions, expires_ms)


async def test_the_list_shows_the_scopes_keys_newest_first(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, own = await make_dashboard()
    scope = await _session_scope(ctx, own)
    (own_key,), _ = await ctx.api_keys.page(scope, 1, None)
    expires = int(time.time() * 1000) + 86_400_000
    _, till = await _key(ctx, scope, "Till 3", permissions=("payments:read", "terminals:write"))
    _, spare = await _key(ctx, scope, "Spare", expires_ms=expires)
    async with ctx.unit() as unit:
        await ctx.api_keys.revoke(unit, spare.id, scope)
    await ctx.api_keys.create("test", "other", "Elsewhere")
    await ctx.api_keys.create("live", "acme", "Live one")

    page = await dashboard.get(KEYS)
    assert page.status == 200 and problems(page.text) == []
    assert _rows(page.text) == [(spare.id, True), (till.id, False), (own_key.id, False)]
    assert "Elsewhere" not in page.text and "Live one" not in page.text
    rows = dict(zip([r for r, _ in _rows(page.text)], ROW.split(page.text)[3::3], strict=True))
    assert "payments:read, terminals:write" in rows[till.id] and "Full access" in rows[own_key.id]
    assert "this session" in rows[own_key.id] and "this session" not in rows[till.id]
    assert f"<code>{till.prefix}…</code>" in rows[till.id]
    assert "Revoked" in rows[spare.id] and "Roll key…" not in rows[spare.id]
    assert "Revoke key…" not in rows[spare.id]
    assert "Roll key…" in rows[till.id] and "Revoke key…" in rows[till.id]
    assert "never" in rows[till.id]  # neither used nor expiring
    assert datetime.fromtimestamp(expires / 1000, UTC).strftime("%Y-%m-%d") in rows[spare.id]


async def test_keys_are_paged_with_the_apis_cursors(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, own = await make_dashboard()
    scope = await _session_scope(ctx, own)
    for n in range(26):
        await _key(ctx, scope, f"key {n}")
    first = await dashboard.get(KEYS)
    assert len(_rows(first.text)) == 25 and "key 25" in first.text and "key 0<" not in first.text
    cursor = re.search(r'href="/dashboard/api_keys\?cursor=([^"]+)" rel="next"', first.text)
    assert cursor is not None
    second = await dashboard.get(f"{KEYS}?cursor={cursor.group(1)}")
    assert len(_rows(second.text)) == 2 and "this session" in second.text
    assert 'rel="next"' not in second.text and "First page" in second.text


async def test_creating_keys_shows_each_secret_once_and_the_keys_work(
    make_dashboard: MakeDashboard, ctx: Context, http: aiohttp.ClientSession
) -> None:
    dashboard, own = await make_dashboard()
    scope = await _session_scope(ctx, own)
    form = await dashboard.get(f"{KEYS}/new")
    assert form.status == 200 and problems(form.text) == []
    full = await dashboard.post(
        KEYS, {"csrf_token": form.token, "name": "Back office", "access": "full"}
    )
    assert full.status == 201 and problems(full.text) == []
    full_secret = _secret(full.text)
    restricted = await dashboard.post(
        KEYS,
        [
            ("csrf_token", form.token),
            ("name", "Till 3"),
            ("access", "restricted"),
            ("permissions", "payments:read"),
            ("permissions", "terminals:write"),
        ],
    )
    assert restricted.status == 201
    till_secret = _secret(restricted.text)
    assert "payments:read, terminals:write" in restricted.text

    listed, _ = await ctx.api_keys.page(scope, 10, None)
    by_name = {key.name: key for key in listed}
    assert by_name["Back office"].permissions is None
    assert by_name["Till 3"].permissions == ("payments:read", "terminals:write")
    assert by_name["Till 3"].prefix == till_secret[:12]

    assert await _status(http, full_secret) == 200
    assert await _status(http, till_secret, "/v1/payments/pay_nothing") == 404
    assert await _status(http, till_secret, "/v1/webhook_endpoints") == 403
    assert await _status(http, till_secret) == 403

    listing = await dashboard.get(KEYS)
    for secret in (full_secret, till_secret):
        assert secret not in listing.text
        assert secret not in (await dashboard.get(f"{KEYS}/{by_name['Till 3'].id}/roll")).text


async def test_a_key_with_an_expiry_date_stops_at_that_day(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, own = await make_dashboard()
    token = (await dashboard.get(f"{KEYS}/new")).token
    day = (datetime.now(UTC) + timedelta(days=30)).date()
    made = await dashboard.post(
        KEYS,
        {"csrf_token": token, "name": "Temp", "access": "full", "expires_at": day.isoformat()},
    )
    assert made.status == 201
    listed, _ = await ctx.api_keys.page(await _session_scope(ctx, own), 1, None)
    midnight = datetime(day.year, day.month, day.day, tzinfo=UTC)
    assert listed[0].expires_ms == int(midnight.timestamp() * 1000)


@pytest.mark.parametrize(
    ("fields", "field", "shown"),
    [
        ([("access", "full"), ("permissions", "payments:read")], "permissions", "uncheck them"),
        ([("access", "restricted")], "permissions", "at least one permission"),
        ([("access", "someone's")], "permissions", "full access or restricted"),
        ([], "permissions", "full access or restricted"),
        ([("access", "full"), ("name", "x" * 101)], "name", "At most 100 characters."),
        ([("access", "full"), ("expires_at", "2020-01-01")], "expires_at", "in the future"),
    ],
    ids=["full and chosen", "restricted, none", "unknown access", "no access", "long", "past"],
)
async def test_a_form_that_cannot_make_a_key_says_why_and_makes_none(
    fields: list[tuple[str, str]],
    field: str,
    shown: str,
    make_dashboard: MakeDashboard,
    ctx: Context,
) -> None:
    dashboard, own = await make_dashboard()
    token = (await dashboard.get(f"{KEYS}/new")).token
    page = await dashboard.post(KEYS, [("csrf_token", token), *fields])
    assert page.status == 422 and problems(page.text) == []
    error = re.search(rf'<p class="field-error" id="{field}-error">([^<]*)</p>', page.text)
    assert error is not None and shown in error.group(1)
    assert 'id="secret"' not in page.text
    listed, _ = await ctx.api_keys.page(await _session_scope(ctx, own), 10, None)
    assert len(listed) == 1  # the session's own key only


async def test_rolling_with_an_hour_keeps_the_old_secret_working(
    make_dashboard: MakeDashboard, ctx: Context, http: aiohttp.ClientSession
) -> None:
    dashboard, own = await make_dashboard()
    scope = await _session_scope(ctx, own)
    old, key = await _key(ctx, scope, "Shop", permissions=("payments:read",))
    assert await _status(http, old, "/v1/payments/pay_nothing") == 404
    path = f"{KEYS}/{key.id}/roll"
    form = await dashboard.get(path)
    assert form.status == 200 and problems(form.text) == []
    unchosen = await dashboard.post(path, {"csrf_token": form.token})
    assert unchosen.status == 422 and "Choose when" in unchosen.text
    too_long = await dashboard.post(path, {"csrf_token": form.token, "expire_previous_in": "9e9"})
    assert too_long.status == 422 and "Must be an integer." in too_long.text
    assert await _unchanged(ctx, key)

    rolled = await dashboard.post(path, {"csrf_token": form.token, "expire_previous_in": "3600"})
    assert rolled.status == 200 and problems(rolled.text) == []
    new = _secret(rolled.text)
    assert new != old and "keeps working until" in rolled.text
    stored = await ctx.api_keys.get(key.id)
    assert stored is not None and stored.prefix == new[:12]
    assert stored.permissions == ("payments:read",)
    assert stored.previous_expires_ms is not None
    assert abs(stored.previous_expires_ms - (time.time() * 1000 + 3_600_000)) < 60_000
    for secret in (old, new):
        assert await _status(http, secret, "/v1/payments/pay_nothing") == 404
    assert new not in (await dashboard.get(KEYS)).text

    now = await dashboard.post(path, {"csrf_token": form.token, "expire_previous_in": "0"})
    assert now.status == 200 and "has stopped working" in now.text
    await _refused_within_a_second(http, new)
    assert await _status(http, _secret(now.text), "/v1/payments/pay_nothing") == 404


async def test_revoking_asks_first_then_the_api_refuses_the_key(
    make_dashboard: MakeDashboard, ctx: Context, http: aiohttp.ClientSession
) -> None:
    dashboard, own = await make_dashboard()
    secret, key = await _key(ctx, await _session_scope(ctx, own), "Old till")
    assert await _status(http, secret) == 200
    path = f"{KEYS}/{key.id}/revoke"
    confirm = await dashboard.get(path)
    assert confirm.status == 200 and problems(confirm.text) == []
    assert "Old till" in confirm.text and "signs you out" not in confirm.text
    assert await _status(http, secret) == 200
    assert await _unchanged(ctx, key)

    done = await dashboard.post(path, {"csrf_token": confirm.token})
    assert done.status == 200 and "API key revoked" in done.text
    await _refused_within_a_second(http, secret)
    assert (key.id, True) in _rows(done.text)
    roll = await dashboard.get(f"{KEYS}/{key.id}/roll")
    assert roll.url.endswith("notice=roll_revoked") and "cannot be rolled" in roll.text
    again = await dashboard.get(path)
    assert "was revoked on" in again.text and "Revoke key</button>" not in again.text


async def test_revoking_the_sessions_own_key_signs_out(make_dashboard: MakeDashboard) -> None:
    dashboard, own = await make_dashboard()
    listing = await dashboard.get(KEYS)
    (own_id, _), *_ = _rows(listing.text)
    confirm = await dashboard.get(f"{KEYS}/{own_id}/revoke")
    assert "revoking it signs you out" in confirm.text
    done = await dashboard.post(f"{KEYS}/{own_id}/revoke", {"csrf_token": confirm.token})
    assert "<h1>Sign in</h1>" in done.text and "revoked or has expired" in done.text
    assert dashboard.cookie(COOKIE) in (None, "")


async def test_another_scopes_key_is_a_404_page(
    make_dashboard: MakeDashboard, ctx: Context, http: aiohttp.ClientSession
) -> None:
    acme, _ = await make_dashboard(org="acme")
    other, other_own = await make_dashboard(org="other")
    secret, key = await _key(ctx, await _session_scope(ctx, other_own), "Theirs")
    token = (await acme.get(KEYS)).token
    for action in ("roll", "revoke"):
        assert (await acme.get(f"{KEYS}/{key.id}/{action}")).status == 404
        form = {"csrf_token": token, "expire_previous_in": "0"}
        page = await acme.post(f"{KEYS}/{key.id}/{action}", form)
        assert page.status == 404 and "Theirs" not in page.text
    assert (await acme.get(f"{KEYS}/key_nonsense/roll")).status == 404
    assert (await acme.get(f"{KEYS}/we_nonsense/revoke")).status == 404
    assert await _unchanged(ctx, key)
    assert await _status(http, secret) == 200


async def test_key_forms_need_the_csrf_token(make_dashboard: MakeDashboard, ctx: Context) -> None:
    dashboard, own = await make_dashboard()
    _, key = await _key(ctx, await _session_scope(ctx, own), "Kept")
    for path, form in (
        (KEYS, {"access": "full"}),
        (f"{KEYS}/{key.id}/roll", {"expire_previous_in": "0"}),
        (f"{KEYS}/{key.id}/revoke", {}),
    ):
        assert (await dashboard.post(path, form)).status == 403
    assert await _unchanged(ctx, key)
    assert len((await ctx.api_keys.page(key.scope, 10, None))[0]) == 2
