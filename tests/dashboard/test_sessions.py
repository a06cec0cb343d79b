"""Signing in and out (with full-access keys only), sessions that end with their key, the
session cookie, CSRF tokens and the security headers."""

from __future__ import annotations

import asyncio
import hashlib
import html
import re

import aiohttp
import orjson
import pytest

from api.dashboard import csrf
from api.dashboard.rendering import CSP
from api.dashboard.sessions import COOKIE
from api.dashboard.signin import RESTRICTED
from svc.context import Context
from tests.conftest import Api, Running
from tests.dashboard.conftest import Dashboard, MakeDashboard

pytestmark = pytest.mark.roles("api")


async def test_sign_in_keeps_the_scope_not_the_key(
    make_dashboard: MakeDashboard, ctx: Context, settings: object
) -> None:
    dashboard, key = await make_dashboard(env="test", org="acme")
    session_id = dashboard.cookie(COOKIE)
    assert session_id and key not in session_id
    page = await dashboard.get("/dashboard/payments")
    assert page.status == 200
    assert "acme" in page.text and "Test mode" in page.text
    assert key[:12] in page.text and key not in page.text
    stored = await ctx.redis.get(
        ctx.keys.dashboard_session(hashlib.sha256(session_id.encode()).hexdigest())
    )
    assert stored is not None and key.encode() not in stored
    assert await ctx.redis.exists(ctx.keys.dashboard_session(session_id)) == 0


async def test_live_mode_is_shown_as_live(make_dashboard: MakeDashboard) -> None:
    dashboard, _ = await make_dashboard(env="live", org="acme")
    page = await dashboard.get("/dashboard/payments")
    assert "Live mode" in page.text and "Test mode" not in page.text


async def _session_cookie(service: Running, key: str) -> tuple[str, set[str]]:
    """The Set-Cookie header of a sign-in, and its attribute names. Cookies are sent by hand:
    a client keeps no ``Secure`` cookie over plain http."""
    async with aiohttp.ClientSession(
        base_url=service.base_url, cookie_jar=aiohttp.DummyCookieJar()
    ) as client:
        async with client.get("/dashboard/login") as response:
            text = await response.text()
            token = response.cookies[csrf.LOGIN_COOKIE].value
        assert f'value="{token}"' in text
        async with client.post(
            "/dashboard/login",
            data={"api_key": key, "csrf_token": token},
            headers={"Cookie": f"{csrf.LOGIN_COOKIE}={token}"},
            allow_redirects=False,
        ) as response:
            assert response.status == 303
            header = next(
                v for v in response.headers.getall("Set-Cookie") if v.startswith(COOKIE + "=")
            )
    return header, {part.strip().split("=")[0].lower() for part in header.split(";")}


async def test_cookie_is_httponly_samesite_strict(service: Running, ctx: Context) -> None:
    key, _ = await ctx.api_keys.create("test", "acme")
    header, attributes = await _session_cookie(service, key)
    assert {"httponly", "samesite", "path"} <= attributes
    assert "samesite=strict" in header.lower() and "path=/dashboard" in header.lower()
    # SVC_DASHBOARD_SECURE_COOKIES=false and plain http to 127.0.0.1: the one case without it.
    assert "secure" not in attributes
    assert key not in header


@pytest.mark.settings(dashboard_secure_cookies=True)
async def test_cookie_is_secure_by_default(service: Running, ctx: Context) -> None:
    key, _ = await ctx.api_keys.create("test", "acme")
    _, attributes = await _session_cookie(service, key)
    assert {"secure", "httponly", "samesite"} <= attributes


async def test_a_wrong_key_is_refused(service: Running) -> None:
    dashboard = Dashboard(service.base_url)
    try:
        page = await dashboard.sign_in("svc_test_" + "x" * 32)
        assert page.status == 401 and "not valid" in page.text
        assert dashboard.cookie(COOKIE) is None
    finally:
        await dashboard.session.close()


async def test_a_restricted_key_is_refused_with_a_reason(service: Running, ctx: Context) -> None:
    key, _ = await ctx.api_keys.create("test", "acme", permissions=("api_keys:write",))
    dashboard = Dashboard(service.base_url)
    try:
        page = await dashboard.sign_in(key)
        assert page.status == 403 and RESTRICTED in html.unescape(page.text)
        assert "<h1>Sign in</h1>" in page.text and dashboard.cookie(COOKIE) is None
        assert (await dashboard.get("/dashboard/api_keys", follow=False)).status == 303
    finally:
        await dashboard.session.close()


async def _key_id(ctx: Context, secret: str) -> str:
    found = await ctx.api_keys.authenticate(secret)
    assert found is not None
    return found.key.id


async def _signed_out_for_its_key(dashboard: Dashboard, ctx: Context) -> None:
    """The next page ends the session: to sign-in with the reason, and gone from Redis."""
    session_id = dashboard.cookie(COOKIE)
    assert session_id
    page = await dashboard.get("/dashboard/webhooks", follow=False)
    assert page.status == 303
    assert page.headers["Location"].endswith("?next=/dashboard/webhooks&notice=key_ended")
    digest = hashlib.sha256(session_id.encode()).hexdigest()
    assert await ctx.redis.exists(ctx.keys.dashboard_session(digest)) == 0
    signin = await dashboard.get(page.headers["Location"])
    assert "<h1>Sign in</h1>" in signin.text and "revoked or has expired" in signin.text


async def test_a_session_ends_when_its_key_is_revoked(
    make_dashboard: MakeDashboard, ctx: Context, service: Running
) -> None:
    dashboard, key = await make_dashboard()
    key_id = await _key_id(ctx, key)
    assert (await dashboard.get("/dashboard/webhooks", follow=False)).status == 200
    stored = await ctx.api_keys.get(key_id)
    assert stored is not None and stored.last_used_ms is not None  # signing in is a use
    async with aiohttp.ClientSession(base_url=service.base_url) as http:
        status, _ = await Api(http, key).call("DELETE", f"/v1/api_keys/{key_id}")
    assert status == 200
    await _signed_out_for_its_key(dashboard, ctx)


async def test_a_session_ends_when_its_key_expires(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, key = await make_dashboard()
    key_id = await _key_id(ctx, key)
    assert (await dashboard.get("/dashboard/webhooks", follow=False)).status == 200
    await ctx.db.execute(
        "UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1", key_id
    )
    await _signed_out_for_its_key(dashboard, ctx)


async def test_a_session_stored_without_its_key_is_no_session(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, _ = await make_dashboard()
    session_id = dashboard.cookie(COOKIE)
    assert session_id
    stored = ctx.keys.dashboard_session(hashlib.sha256(session_id.encode()).hexdigest())
    raw = await ctx.redis.get(stored)
    assert raw is not None
    older = {name: value for name, value in orjson.loads(raw).items() if name != "key_id"}
    await ctx.redis.set(stored, orjson.dumps(older))
    page = await dashboard.get("/dashboard/payments", follow=False)
    assert page.status == 303 and "notice=expired" in page.headers["Location"]


async def test_pages_need_a_session(service: Running) -> None:
    dashboard = Dashboard(service.base_url)
    try:
        paths = ("/dashboard/webhooks", "/dashboard/payments", "/dashboard/terminals")
        for path in (*paths, "/dashboard/api_keys", "/dashboard/api_keys/new"):
            page = await dashboard.get(path, follow=False)
            assert page.status == 303
            assert page.headers["Location"].startswith("/dashboard/login?next=")
    finally:
        await dashboard.session.close()


async def test_sign_out_closes_the_pages_even_to_the_old_cookie(
    make_dashboard: MakeDashboard, service: Running
) -> None:
    dashboard, _ = await make_dashboard()
    old = dashboard.cookie(COOKIE)
    page = await dashboard.get("/dashboard/webhooks")
    out = await dashboard.post("/dashboard/logout", {"csrf_token": page.token})
    assert out.status == 200 and "You are signed out" in out.text
    assert (await dashboard.get("/dashboard/webhooks", follow=False)).status == 303
    replay = Dashboard(service.base_url)
    try:
        assert old is not None
        replay.session.cookie_jar.update_cookies({COOKIE: old})
        page = await replay.get("/dashboard/webhooks", follow=False)
        assert page.status == 303 and "notice=expired" in page.headers["Location"]
    finally:
        await replay.session.close()


@pytest.mark.settings(dashboard_session_ttl=1.0)
async def test_an_idle_session_expires(make_dashboard: MakeDashboard, ctx: Context) -> None:
    dashboard, _ = await make_dashboard()
    assert (await dashboard.get("/dashboard/payments", follow=False)).status == 200
    session_id = dashboard.cookie(COOKIE)
    assert session_id is not None
    digest = hashlib.sha256(session_id.encode()).hexdigest()
    assert await ctx.redis.ttl(ctx.keys.dashboard_session(digest)) == 1
    await asyncio.sleep(1.2)
    page = await dashboard.get("/dashboard/payments")
    assert page.url.split("?")[0].endswith("/dashboard/login")
    assert "Your session has ended" in page.text


async def test_losing_redis_means_signing_in_again(
    make_dashboard: MakeDashboard, settings: object, ctx: Context
) -> None:
    dashboard, _ = await make_dashboard()
    keys = [k async for k in ctx.redis.scan_iter(match=ctx.keys.dashboard_session("*"))]
    assert keys
    await ctx.redis.delete(*keys)
    page = await dashboard.get("/dashboard/webhooks")
    assert "<h1>Sign in</h1>" in page.text


async def test_a_post_without_the_csrf_token_is_refused(make_dashboard: MakeDashboard) -> None:
    dashboard, _ = await make_dashboard()
    before = await dashboard.get("/dashboard/webhooks")
    for data in ({}, {"csrf_token": "forged-" + "x" * 30}):
        form = {"url": "https://hooks.example.com/a", "events": "payment.succeeded", **data}
        page = await dashboard.post("/dashboard/webhooks", form)
        assert page.status == 403 and "token" in page.text
        page = await dashboard.post("/dashboard/logout", data)
        assert page.status == 403
    after = await dashboard.get("/dashboard/webhooks")
    assert after.status == 200 and after.text.count("hooks.example.com") == 0
    assert before.token == after.token  # still signed in, nothing created


async def test_sign_in_needs_its_own_csrf_token(service: Running, ctx: Context) -> None:
    key, _ = await ctx.api_keys.create("test", "acme")
    dashboard = Dashboard(service.base_url)
    try:
        await dashboard.get("/dashboard/login")
        page = await dashboard.post(
            "/dashboard/login", {"api_key": key, "csrf_token": "y" * 43}, follow=False
        )
        assert page.status == 403 and dashboard.cookie(COOKIE) is None
    finally:
        await dashboard.session.close()


async def test_every_response_forbids_inline_scripts(make_dashboard: MakeDashboard) -> None:
    dashboard, _ = await make_dashboard()
    for path in ("/dashboard/login", "/dashboard/webhooks", "/dashboard/nowhere"):
        page = await dashboard.get(path)
        assert page.headers["Content-Security-Policy"] == CSP
        assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP
        assert page.headers["X-Frame-Options"] == "DENY"
        assert page.headers["Cache-Control"] == "no-store"
        assert "<script>" not in page.text and " on" + "click=" not in page.text


async def test_unknown_pages_are_html_404s(make_dashboard: MakeDashboard) -> None:
    dashboard, _ = await make_dashboard()
    page = await dashboard.get("/dashboard/nowhere")
    assert page.status == 404 and page.headers["Content-Type"].startswith("text/html")
    assert "<h1>Not found</h1>" in page.text


async def test_sign_in_returns_to_the_page_asked_for_and_nowhere_else(
    service: Running, ctx: Context
) -> None:
    key, _ = await ctx.api_keys.create("test", "acme")
    for asked, landing in (
        ("/dashboard/terminals", "/dashboard/terminals"),
        ("/dashboard/login?next=//evil.example/dashboard/", "/dashboard/payments"),
        ("/dashboard/login?next=https://evil.example/", "/dashboard/payments"),
    ):
        dashboard = Dashboard(service.base_url)
        try:
            form = await dashboard.get(asked)
            assert "<h1>Sign in</h1>" in form.text
            action = re.search(r'<form method="post" action="([^"]+)"', form.text)
            assert action is not None
            page = await dashboard.post(
                html.unescape(action.group(1)),
                {"api_key": key, "csrf_token": form.token},
                follow=False,
            )
            assert page.status == 303 and page.headers["Location"] == landing
        finally:
            await dashboard.session.close()
