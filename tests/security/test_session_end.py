"""Dashboard sessions end with the secret they signed in with: a roll that expires it (at once
or when its grace period ends) and a revocation send the session's next page, and the delivery
log's poll, back to sign-in, on every API process; and no session lives past
``SVC_DASHBOARD_SESSION_MAX_AGE``, however often it is polled."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from api.dashboard.sessions import COOKIE
from harness.processes import spawn
from svc.context import Context
from svc.settings import Settings
from tests.conftest import Api, Running
from tests.dashboard.conftest import Dashboard

pytestmark = [pytest.mark.roles("api"), pytest.mark.settings(dashboard_secure_cookies=False)]

PAGE = "/dashboard/webhooks"


@contextlib.asynccontextmanager
async def _signed_in(base_url: str, key: str) -> AsyncIterator[Dashboard]:
    """A dashboard session signed in with ``key``, closed on leaving."""
    dashboard = Dashboard(base_url)
    try:
        signed_in = await dashboard.sign_in(key)
        assert signed_in.status == 303, signed_in.text
        yield dashboard
    finally:
        await dashboard.session.close()


async def _key(ctx: Context, org: str = "acme") -> tuple[str, str]:
    """A new test key of ``org``: its secret and its id."""
    secret, _ = await ctx.api_keys.create("test", org)
    found = await ctx.api_keys.authenticate(secret)
    assert found is not None
    return secret, found.key.id


async def _roll(api: Api, key_id: str, expire_previous_in: int) -> dict[str, Any]:
    """Roll the key; its new secret's answer."""
    status, rolled = await api.call(
        "POST", f"/v1/api_keys/{key_id}/roll", json={"expire_previous_in": expire_previous_in}
    )
    assert status == 200, rolled
    assert isinstance(rolled, dict)
    return rolled


async def _until_grace_ends(rolled_at: float) -> None:
    """Sleep until a two-second grace period from ``rolled_at`` is past."""
    await asyncio.sleep(max(0.0, 2.3 - (time.monotonic() - rolled_at)))


async def _poll_path(api: Api) -> str:
    """The delivery log fragment the endpoint page polls."""
    endpoint = await api.endpoint("https://hooks.example.com/a", ["payment.succeeded"])
    return f"/dashboard/webhooks/{endpoint['id']}/deliveries"


async def _open(dashboard: Dashboard, path: str) -> bool:
    """Whether the session still opens ``path``; else it was sent to sign-in."""
    page = await dashboard.get(path, follow=False)
    if page.status == 200:
        return True
    assert page.status == 303, page.text
    assert page.headers["Location"].startswith("/dashboard/login?next=")
    return False


async def _ended_for_its_key(dashboard: Dashboard, ctx: Context, poll: str) -> None:
    """The poll and the next page go to sign-in, and the session is gone from Redis."""
    session_id = dashboard.cookie(COOKIE)
    assert session_id
    assert not await _open(dashboard, poll)
    assert not await _open(dashboard, PAGE)
    digest = hashlib.sha256(session_id.encode()).hexdigest()
    assert await ctx.redis.exists(ctx.keys.dashboard_session(digest)) == 0


async def test_a_roll_expiring_the_secret_at_once_ends_the_session(
    service: Running, ctx: Context, api: Api
) -> None:
    key, key_id = await _key(ctx)
    poll = await _poll_path(api)
    async with _signed_in(service.base_url, key) as dashboard:
        assert await _open(dashboard, PAGE) and await _open(dashboard, poll)
        rolled = await _roll(api, key_id, 0)
        await _ended_for_its_key(dashboard, ctx, poll)
    # The new secret signs in as before.
    async with _signed_in(service.base_url, rolled["secret"]) as again:
        assert await _open(again, PAGE)


async def test_a_roll_ends_the_session_when_the_grace_period_ends(
    service: Running, ctx: Context, api: Api
) -> None:
    key, key_id = await _key(ctx)
    poll = await _poll_path(api)
    async with _signed_in(service.base_url, key) as dashboard:
        await _roll(api, key_id, 2)
        rolled_at = time.monotonic()
        assert await _open(dashboard, PAGE) and await _open(dashboard, poll)
        await _until_grace_ends(rolled_at)
        await _ended_for_its_key(dashboard, ctx, poll)


async def test_a_session_signed_in_during_the_grace_period_ends_with_it(
    service: Running, ctx: Context, api: Api
) -> None:
    """Signing in with the previous secret gives a session no longer than that secret."""
    key, key_id = await _key(ctx)
    await _roll(api, key_id, 2)
    rolled_at = time.monotonic()
    async with _signed_in(service.base_url, key) as dashboard:
        assert await _open(dashboard, PAGE)
        await _until_grace_ends(rolled_at)
        assert not await _open(dashboard, PAGE)


async def test_a_roll_before_another_ends_a_session_of_the_oldest_secret(
    service: Running, ctx: Context, api: Api
) -> None:
    """Two rolls with grace periods: the secret before the previous one works no more, so
    neither does a session signed in with it."""
    key, key_id = await _key(ctx)
    async with _signed_in(service.base_url, key) as dashboard:
        for _ in range(2):
            await _roll(api, key_id, 600)
        assert not await _open(dashboard, PAGE)


async def test_a_revocation_ends_the_session(service: Running, ctx: Context, api: Api) -> None:
    key, key_id = await _key(ctx)
    poll = await _poll_path(api)
    async with _signed_in(service.base_url, key) as dashboard:
        assert await _open(dashboard, poll)
        status, _ = await api.call("DELETE", f"/v1/api_keys/{key_id}")
        assert status == 200
        await _ended_for_its_key(dashboard, ctx, poll)


@pytest.mark.settings(dashboard_secure_cookies=False, dashboard_session_max_age=2.0)
async def test_a_session_past_its_max_age_is_refused_even_while_polled(
    service: Running, ctx: Context, api: Api
) -> None:
    key, _ = await ctx.api_keys.create("test", "acme")
    poll = await _poll_path(api)
    async with _signed_in(service.base_url, key) as dashboard:
        signed_in_at = time.monotonic()
        session_id = dashboard.cookie(COOKIE)
        assert session_id
        stored = ctx.keys.dashboard_session(hashlib.sha256(session_id.encode()).hexdigest())
        while time.monotonic() - signed_in_at < 1.5:
            assert await _open(dashboard, poll)
            # Each poll renews the idle time-out, never past the session's lifetime.
            assert 0 < await ctx.redis.ttl(stored) <= 2
            await asyncio.sleep(0.2)
        while time.monotonic() - signed_in_at < 2.2:
            await _open(dashboard, poll)
            await asyncio.sleep(0.2)
        assert not await _open(dashboard, poll)
        page = await dashboard.get(PAGE, follow=False)
        assert page.status == 303 and "notice=expired" in page.headers["Location"]


@pytest.mark.timeout(90)
@pytest.mark.settings(dashboard_secure_cookies=False, api_key_cache_ttl=60.0)
async def test_a_roll_ends_the_session_on_every_api_process_within_a_second(
    settings: Settings, ctx: Context
) -> None:
    """Each process caches resolved keys for a minute here: nothing cached may keep a
    session of the rolled secret open on the process that did not roll it."""
    key, key_id = await _key(ctx, "two-processes")
    processes = [await spawn(settings, "api") for _ in range(2)]
    bases = [f"http://127.0.0.1:{port}" for _, port in processes]
    try:
        async with contextlib.AsyncExitStack() as stack:
            dashboards = [await stack.enter_async_context(_signed_in(b, key)) for b in bases]
            for dashboard in dashboards:
                assert await _open(dashboard, PAGE)
            async with aiohttp.ClientSession(base_url=bases[0]) as http:
                await _roll(Api(http, key), key_id, 0)
            rolled_at = time.monotonic()
            while await _open(dashboards[1], PAGE):
                assert time.monotonic() - rolled_at < 1.0, "still signed in after 1 s"
                await asyncio.sleep(0.05)
            assert not await _open(dashboards[0], PAGE)
    finally:
        for process, _ in processes:
            process.terminate()
            await process.wait()
