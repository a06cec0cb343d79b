"""An endpoint page's settings and operations: disable and enable, secret rotation with the new
secret shown once, and recover of the events it missed."""

from __future__ import annotations

import re
import time
from dataclasses import replace

import pytest

from svc.context import Context
from svc.envelope import new_event
from svc.events.model import Attempt
from svc.ids import new_id
from svc.orgs import Scope
from svc.webhooks import flow
from svc.webhooks.model import Endpoint, Options
from tests.dashboard.a11y import problems
from tests.dashboard.conftest import Dashboard, MakeDashboard

pytestmark = pytest.mark.roles("api")
HOOK = "https://hooks.example.com/svc"


async def _setup(make_dashboard: MakeDashboard, ctx: Context) -> tuple[Dashboard, Endpoint]:
    dashboard, key = await make_dashboard()
    scope = await ctx.api_keys.resolve(key)
    assert scope is not None
    options = Options(rate_limit=7, ordered=True)
    async with ctx.unit() as unit:
        endpoint = await flow.create(ctx, unit, scope, HOOK, ["payment.succeeded"], "", options)
    return dashboard, endpoint


async def _opened(
    make_dashboard: MakeDashboard, ctx: Context
) -> tuple[Dashboard, Endpoint, str, str]:
    """A signed-in dashboard, its endpoint, the endpoint page's path and a form token."""
    dashboard, endpoint = await _setup(make_dashboard, ctx)
    path = f"/dashboard/webhooks/{endpoint.id}"
    return dashboard, endpoint, path, (await dashboard.get(path)).token


def _scope(endpoint: Endpoint) -> Scope:
    return Scope(endpoint.org, endpoint.env)


def _fact(text: str, name: str) -> str:
    found = re.search(rf"<dt>{name}</dt><dd[^>]*>(.*?)</dd>", text)
    assert found is not None, name
    return re.sub(r"<[^>]+>", "", found.group(1))


async def test_the_page_shows_the_delivery_settings(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, endpoint = await _setup(make_dashboard, ctx)
    page = await dashboard.get(f"/dashboard/webhooks/{endpoint.id}")
    assert _fact(page.text, "Status") == "Enabled"
    assert _fact(page.text, "Signature scheme") == "svc"
    assert _fact(page.text, "Rate limit") == "7 deliveries per second"
    assert _fact(page.text, "Ordered delivery").startswith("on")
    assert problems(page.text) == []


async def test_disable_refuses_test_sends_until_enabled_again(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, endpoint, path, token = await _opened(make_dashboard, ctx)
    off = await dashboard.post(f"{path}/disable", {"csrf_token": token})
    assert off.status == 200 and _fact(off.text, "Status") == "Disabled (manual)"
    assert "Enable endpoint" in off.text
    stored = await ctx.endpoints.get(_scope(endpoint), endpoint.id)
    assert stored is not None and stored.disabled and stored.disabled_reason == "manual"
    test = await dashboard.post(f"{path}/test", {"csrf_token": token}, follow=False)
    assert test.headers["Location"] == f"{path}?notice=endpoint_disabled"
    on = await dashboard.post(f"{path}/enable", {"csrf_token": token})
    assert _fact(on.text, "Status") == "Enabled" and "Disable endpoint" in on.text
    stored = await ctx.endpoints.get(_scope(endpoint), endpoint.id)
    assert stored is not None and not stored.disabled
    refused = await dashboard.post(f"{path}/disable", {})
    assert refused.status == 403


async def test_rotation_shows_the_new_secret_once_and_keeps_the_old_one_signing(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, endpoint, path, token = await _opened(make_dashboard, ctx)
    rotated = await dashboard.post(f"{path}/rotate", {"csrf_token": token})
    assert rotated.status == 201 and problems(rotated.text) == []
    shown = re.search(r'<code id="secret">(whsec_[^<]+)</code>', rotated.text)
    assert shown is not None and shown.group(1) != endpoint.secret
    stored = await ctx.endpoints.get(_scope(endpoint), endpoint.id)
    assert stored is not None and stored.secret == shown.group(1)
    now_ms = int(time.time() * 1000)
    assert stored.signing_secrets(now_ms) == (shown.group(1), endpoint.secret)
    assert stored.previous_secret_expires_ms is not None
    assert abs(stored.previous_secret_expires_ms - (now_ms + 86_400_000)) < 60_000
    page = await dashboard.get(path)
    assert shown.group(1) not in page.text and "Previous secret signs until" in page.text


async def test_recover_resends_what_failed_in_the_window(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, endpoint, path, token = await _opened(make_dashboard, ctx)

    async def recover(hours: str) -> str:
        done = await dashboard.post(
            f"{path}/recover", {"csrf_token": token, "hours": hours}, follow=False
        )
        assert done.status == 303
        return done.headers["Location"].split("notice=")[1]

    assert await recover("24") == "nothing_to_recover"
    assert await recover("5") == "recover_window"
    now_ms = int(time.time() * 1000)
    event = new_event("payment.succeeded", "test", {"id": new_id("pay")})
    event = replace(event, created_ms=now_ms)
    async with ctx.unit() as unit:
        await ctx.events.insert(unit, event, endpoint.org, outbox=False)
    failed = Attempt(
        new_id("att"), event.id, event.type, endpoint.id, 1, "initial", "http_error",
        503, None, 12.0, "", now_ms, now_ms + 60_000,
    )  # fmt: skip
    await ctx.deliveries.record([failed])
    assert await recover("1") == "recovering"


async def test_the_edit_form_sets_and_shows_headers_and_filter(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, endpoint = await _setup(make_dashboard, ctx)
    path = f"/dashboard/webhooks/{endpoint.id}/edit"
    form = await dashboard.get(path)
    fields = [
        ("csrf_token", form.token),
        ("url", HOOK),
        ("events", "payment.succeeded"),
        ("headers", "Host: evil.example\nX-Tenant: bakery"),
        ("filter", '{"data.amount": {"$regex": "1"}}'),
    ]
    refused = await dashboard.post(path, fields)
    assert refused.status == 422
    assert "Host is set by the delivery itself" in refused.text
    assert "[data.amount][$regex]: Unknown operator" in refused.text
    assert problems(refused.text) == []
    fields[3:] = [("headers", "X-Tenant: bakery"), ("filter", '{"data.amount": {"$gte": 100}}')]
    saved = await dashboard.post(path, fields)
    assert saved.status == 200, saved.text
    assert _fact(saved.text, "Headers") == "X-Tenant"  # names only: values may be credentials
    assert _fact(saved.text, "Filter") == '{"data.amount": {"$gte": 100}}'
    stored = await ctx.endpoints.load(endpoint.id)
    assert stored is not None
    assert (stored.headers, stored.filter) == (
        {"X-Tenant": "bakery"},
        {"data.amount": {"$gte": 100}},
    )
    assert "X-Tenant: bakery" in (await dashboard.get(path)).text


async def test_the_edit_form_sets_a_client_certificate_and_never_shows_its_key(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    import trustme

    dashboard, endpoint = await _setup(make_dashboard, ctx)
    issued = trustme.CA().issue_cert("client.example")
    chain = issued.cert_chain_pems[0].bytes().decode()
    key = issued.private_key_pem.bytes().decode()
    path = f"/dashboard/webhooks/{endpoint.id}/edit"
    base = [("url", HOOK), ("events", "payment.succeeded")]
    form = await dashboard.get(path)
    saved = await dashboard.post(
        path,
        [("csrf_token", form.token), *base, ("client_certificate", chain), ("client_key", key)],
    )
    assert saved.status == 200, saved.text
    assert "O=trustme" in _fact(saved.text, "Client certificate")
    assert "key set" in _fact(saved.text, "Client certificate")
    again = await dashboard.get(path)
    assert "PRIVATE KEY" not in again.text and "BEGIN CERTIFICATE" in again.text
    kept = await dashboard.post(
        path,
        [("csrf_token", again.token), *base, ("description", "x"), ("client_certificate", chain)],
    )
    assert kept.status == 200, kept.text  # an unchanged certificate keeps its stored key
    stored = await ctx.endpoints.load(endpoint.id)
    assert stored is not None and stored.client_key is not None
    removed = await dashboard.post(path, [("csrf_token", again.token), *base])
    assert removed.status == 200
    stored = await ctx.endpoints.load(endpoint.id)
    assert stored is not None and stored.client_certificate is None and stored.client_key is None


async def test_the_edit_form_shows_a_broker_password_masked_and_keeps_it(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, endpoint = await _setup(make_dashboard, ctx)
    path = f"/dashboard/webhooks/{endpoint.id}/edit"
    broker = "amqps://shop:hunter2-secret@mq.example/sales?exchange=payments"
    masked = "amqps://shop:****@mq.example/sales?exchange=payments"
    base = [("events", "payment.succeeded")]
    form = await dashboard.get(path)
    saved = await dashboard.post(path, [("csrf_token", form.token), ("url", broker), *base])
    assert saved.status == 200, saved.text
    assert "hunter2" not in saved.text and masked in saved.text
    again = await dashboard.get(path)
    assert "hunter2" not in again.text and f'value="{masked}"' in again.text
    kept = await dashboard.post(
        path, [("csrf_token", again.token), ("url", masked), ("description", "x"), *base]
    )
    assert kept.status == 200, kept.text  # the form sent back as shown keeps the password
    stored = await ctx.endpoints.load(endpoint.id)
    assert stored is not None and stored.url_password == "hunter2-secret"
    listed = await dashboard.get("/dashboard/webhooks")
    assert "hunter2" not in listed.text and masked in listed.text
