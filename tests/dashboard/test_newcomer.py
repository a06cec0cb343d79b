"""What a newcomer reads on the dashboard: a failed attempt's error in words, amounts as the
API gives them, endpoints named by their URL."""

from __future__ import annotations

import re
import time

import pytest
from playwright.async_api import Browser, expect

from svc.context import Context
from svc.events.model import Attempt
from svc.ids import new_id
from svc.orgs import Scope
from tests.conftest import Running
from tests.dashboard.conftest import MakeDashboard, paid_payment

pytestmark = pytest.mark.roles("api")
HOOK = "https://hooks.example.com/svc"


async def _scope(ctx: Context, key: str) -> Scope:
    scope = await ctx.api_keys.resolve(key)
    assert scope is not None
    return scope


async def _endpoint(ctx: Context, scope: Scope, url: str = HOOK) -> str:
    from svc.webhooks import flow

    async with ctx.unit() as unit:
        endpoint = await flow.create(ctx, unit, scope, url, ["payment.succeeded"], "")
    return endpoint.id


async def test_a_failed_attempts_error_is_shown_in_words(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, key = await make_dashboard()
    endpoint_id = await _endpoint(ctx, await _scope(ctx, key))
    now = int(time.time() * 1000)
    error = "connection refused to hooks.example.com:443"
    attempt = Attempt(
        id=new_id("att"),
        event_id=new_id("evt"),
        event_type="payment.succeeded",
        endpoint_id=endpoint_id,
        attempt=1,
        trigger="test",
        outcome="connect",
        status_code=None,
        error=error,
        duration_ms=1.5,
        response_body="",
        attempted_ms=now,
        next_attempt_ms=now + 60_000,
    )
    await ctx.deliveries.record([attempt])
    page = await dashboard.get(f"/dashboard/webhooks/{endpoint_id}")
    assert f'<span class="hint attempt-error">{error}</span>' in page.text


def _attempt(endpoint_id: str, event_id: str, succeeded: bool) -> Attempt:
    now = int(time.time() * 1000)
    return Attempt(
        id=new_id("att"),
        event_id=event_id,
        event_type="payment.succeeded",
        endpoint_id=endpoint_id,
        attempt=1,
        trigger="initial",
        outcome="success" if succeeded else "http_error",
        status_code=200 if succeeded else 500,
        error=None,
        duration_ms=3.0,
        response_body="",
        attempted_ms=now,
        next_attempt_ms=None if succeeded else now + 60_000,
    )


async def test_the_webhooks_list_shows_each_endpoints_status_and_health(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, key = await make_dashboard()
    scope = await _scope(ctx, key)
    healthy = await _endpoint(ctx, scope, "https://hooks.example.com/healthy")
    quiet = await _endpoint(ctx, scope, "https://hooks.example.com/quiet")
    event_id = new_id("evt")
    await ctx.deliveries.record(
        [_attempt(healthy, event_id, True), _attempt(healthy, new_id("evt"), False)]
    )
    async with ctx.unit() as unit:
        await ctx.endpoints.update(unit, scope, quiet, {"disabled": True}, int(time.time() * 1000))
    page = await dashboard.get("/dashboard/webhooks")
    rows = {
        match.group(1): match.group(0)
        for match in re.finditer(
            r'<tr>\s*<td class="url"><a href="/dashboard/webhooks/(we_\w+)">.*?</tr>',
            page.text,
            re.S,
        )
    }
    assert ">enabled<" in rows[healthy] and ">disabled<" not in rows[healthy]
    assert "50.0 % of 2 attempts succeeded" in rows[healthy]
    assert ">disabled<" in rows[quiet]
    assert "No delivery attempts in the last 24 hours." in rows[quiet]


async def test_event_and_payment_pages_name_endpoints_by_url(
    make_dashboard: MakeDashboard, ctx: Context, service: Running
) -> None:
    dashboard, key = await make_dashboard()
    scope = await _scope(ctx, key)
    endpoint_id = await _endpoint(ctx, scope)
    payment_id = await paid_payment(service, key, 2450)
    found = await ctx.events.about(scope, payment_id, 0, int(time.time() * 1000) + 5_000, 10)
    assert found
    for stored in found:
        await ctx.deliveries.record([_attempt(endpoint_id, stored.event.id, True)])
    event_page = await dashboard.get(f"/dashboard/events/{found[0].event.id}")
    link = f'<a class="url" href="/dashboard/webhooks/{endpoint_id}">{HOOK}</a>'
    assert link in event_page.text
    payment_page = await dashboard.get(f"/dashboard/payments/{payment_id}")
    assert link in payment_page.text


async def test_a_payments_amount_is_the_apis_and_its_tip_is_apart(
    make_dashboard: MakeDashboard, ctx: Context, service: Running
) -> None:
    dashboard, key = await make_dashboard()
    payment_id = await paid_payment(service, key, 2450)
    await ctx.db.execute("UPDATE payments SET tip = 245 WHERE id = $1", payment_id)
    page = await dashboard.get(f"/dashboard/payments/{payment_id}")
    heading = re.search(r"<h1>(.*?)</h1>", page.text, re.S)
    assert heading is not None
    assert heading.group(1).startswith('CHF 24.50 <span class="tip">+ CHF 2.45 tip</span>')
    assert "<dt>Total</dt><dd>CHF 26.95</dd>" in page.text
    listed = await dashboard.get("/dashboard/payments")
    assert '<td class="amount">CHF 24.50<br><span class="tip">+ CHF 2.45 tip</span></td>' in (
        listed.text
    )


@pytest.mark.browser
@pytest.mark.roles("api")
async def test_the_reference_opens_on_payments(browser: Browser, service: Running) -> None:
    context = await browser.new_context(base_url=service.base_url)
    context.set_default_timeout(10_000)
    page = await context.new_page()
    await page.goto("/docs")
    sections = page.locator(".opblock-tag-section .opblock-tag")
    await expect(sections.first).to_be_visible()
    names = [await section.get_attribute("data-tag") for section in await sections.all()]
    assert names[0] == "Payments", names
    assert names[-1] == "Operations", names
    await context.close()
