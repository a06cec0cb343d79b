"""The dashboard in a real browser (Debian's Chromium through Playwright): sign in, Developer →
Webhooks, create an endpoint against a local receiver, send a test event and watch its
delivery arrive in the log, resend it, sign out; Developer → Events: an event's body and
attempts, resend it; Developer → API keys: create a restricted key, roll it, revoke it; CSRF
and another organisation's ids."""

from __future__ import annotations

import asyncio
import re
import time

import aiohttp
import pytest
from playwright.async_api import Browser, BrowserContext, Page, expect

from harness.receivers import Receiver
from svc.context import Context
from svc.events.flow import emit
from tests.conftest import Api, Running
from tests.dashboard.conftest import Shots, paid_payment

pytestmark = pytest.mark.browser

LAPTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
WAIT_MS = 10_000


async def _context(browser: Browser, service: Running) -> BrowserContext:
    context = await browser.new_context(base_url=service.base_url, viewport=LAPTOP)
    context.set_default_timeout(WAIT_MS)
    return context


async def _sign_in(page: Page, key: str) -> None:
    await page.goto("/dashboard/login")
    await page.get_by_label("API key").fill(key)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("button", name="Sign out")).to_be_visible()


async def test_webhooks_in_a_browser(
    browser: Browser, service: Running, ctx: Context, receiver: Receiver, shots: Shots
) -> None:
    key, scope = await ctx.api_keys.create("test", "acme")
    context = await _context(browser, service)
    page = await context.new_page()
    await page.goto("/dashboard/login")
    await shots.take(page, "login")
    await _sign_in(page, key)
    await expect(page.get_by_text("Test mode", exact=False).first).to_be_visible()

    await page.get_by_role("link", name="Developer").click()
    await page.get_by_role("link", name="Webhooks").click()
    await expect(page).to_have_url(re.compile(r"/dashboard/webhooks$"))
    await page.get_by_role("link", name="Add endpoint").click()
    await page.get_by_label("Endpoint URL").fill(receiver.url("/hook"))
    await page.get_by_label("payment.succeeded").check()
    await page.get_by_role("button", name="Create endpoint").click()
    secret = await page.locator("#secret").inner_text()
    assert secret.startswith("whsec_")
    await shots.take(page, "endpoint-created")
    await page.get_by_role("link", name="Open the endpoint").click()
    endpoint_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    assert endpoint_id.startswith("we_")

    # The test event's delivery appears with its response code.
    await page.get_by_role("button", name="Send test event").click()
    await receiver.wait_for(lambda r: len(r) >= 1)
    first = page.locator("tr.delivery")
    await expect(first).to_have_count(1)
    await expect(first.locator(".status-code")).to_have_text("204")
    event_id = await first.get_attribute("data-event-id")
    assert event_id is not None and receiver.received[0].headers["Svc-Event-Id"] == event_id

    # Resend: a second attempt of the same event, to this endpoint.
    await first.get_by_role("button", name="Resend").click()
    await receiver.wait_for(lambda r: len(r) >= 2)
    attempts = page.locator(f'tr.delivery[data-event-id="{event_id}"]')
    await expect(attempts).to_have_count(2)
    await expect(attempts.first).to_have_attribute("data-trigger", "resend")
    await expect(attempts.first.locator(".status-code")).to_have_text("204")

    # Live: with the page left alone, a new delivery shows up within 5 s of happening (this
    # one fails with a 503, and its retry a second later succeeds).
    receiver.on("/hook", lambda _path, count: 503 if count == 3 else 204)
    await page.evaluate("window.svcUntouched = true")
    event = await emit(ctx, scope.org, scope.env, "payment.succeeded", {"id": "pay_1", "amount": 5})
    await receiver.wait_for(lambda r: len(r) >= 3)
    delivered = time.monotonic()
    failed = page.locator(f'tr.delivery[data-event-id="{event.id}"]')
    await expect(failed.last.locator(".status-code")).to_have_text("503", timeout=5_000)
    assert time.monotonic() - delivered < 5
    await expect(failed).to_have_count(2)  # the retry, a second later
    await expect(failed.first.locator(".status-code")).to_have_text("204")
    assert await page.evaluate("window.svcUntouched === true"), "the page was reloaded"

    # The delivery health picture, drawn on the server: this hour has three successes and a
    # failure, and the page breaks no rule of its Content-Security-Policy doing so.
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if m.type == "error" else None)
    await page.goto(f"/dashboard/webhooks/{endpoint_id}")
    health = page.locator("#delivery-health")
    await expect(health.locator("figcaption")).to_contain_text(
        "Last 24 hours: 75.0 % of 4 attempts succeeded (3 succeeded, 1 failed)."
    )
    await expect(health.locator("svg g.hour")).to_have_count(24)
    await expect(health.locator("svg rect.succeeded")).to_have_count(1)
    await expect(health.locator("svg rect.failed")).to_have_count(1)
    assert await health.get_by_role("img").get_attribute("aria-labelledby") == (
        "health-title health-summary"
    )
    failed_bar = await health.locator("svg rect.failed").bounding_box()
    succeeded_bar = await health.locator("svg rect.succeeded").bounding_box()
    assert (
        failed_bar
        and succeeded_bar
        and failed_bar["height"] * 3 == pytest.approx(succeeded_bar["height"], rel=0.05)
    )
    assert refused == []
    await shots.take(page, "endpoint")

    await page.set_viewport_size(PHONE)
    await shots.take(page, "endpoint-phone")
    await page.set_viewport_size(LAPTOP)
    await page.get_by_role("link", name="Webhooks").first.click()
    await shots.take(page, "webhooks")

    payment_id = await paid_payment(service, key, 12850)
    await page.get_by_role("link", name="Payments").click()
    await expect(page.get_by_role("link", name=payment_id)).to_be_visible()
    await shots.take(page, "payments")
    await page.get_by_role("link", name=payment_id).click()
    await expect(page.get_by_role("cell", name="payment.succeeded", exact=True)).to_be_visible()
    await shots.take(page, "payment")
    await page.get_by_role("link", name="Terminals").click()
    await expect(page.get_by_text("online", exact=True)).to_be_visible()
    await shots.take(page, "terminals")

    # Sign out: every page is closed to this browser.
    await page.get_by_role("button", name="Sign out").click()
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    await expect(page.get_by_text("You are signed out")).to_be_visible()
    for path in ("/dashboard/webhooks", f"/dashboard/webhooks/{endpoint_id}"):
        await page.goto(path)
        await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        assert "/dashboard/login" in page.url
    await context.close()


async def test_events_in_a_browser(
    browser: Browser, service: Running, ctx: Context, receiver: Receiver, shots: Shots
) -> None:
    from svc.webhooks import flow

    key, scope = await ctx.api_keys.create("test", "acme")
    async with ctx.unit() as unit:
        await flow.create(ctx, unit, scope, receiver.url("/events"), ["payment.succeeded"], "")
    event = await emit(ctx, scope.org, scope.env, "payment.succeeded", {"id": "pay_7", "amount": 9})
    await receiver.wait_for(lambda r: len(r) >= 1)
    context = await _context(browser, service)
    page = await context.new_page()
    await _sign_in(page, key)

    await page.get_by_role("link", name="Developer").click()
    await page.get_by_role("link", name="Events", exact=True).click()
    await expect(page).to_have_url(re.compile(r"/dashboard/events$"))
    await shots.take(page, "events")
    await page.get_by_role("link", name=event.id).click()
    await expect(page.get_by_role("heading", name="payment.succeeded")).to_be_visible()
    await expect(page.locator("#event-body")).to_contain_text('"id": "pay_7"')
    await expect(page.get_by_role("button", name="Copy")).to_be_visible()
    attempts = page.locator("tr.delivery")
    deadline = time.monotonic() + WAIT_MS / 1000
    while await attempts.count() < 1 and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
        await page.reload()
    await expect(attempts.first.locator(".status-code")).to_have_text("204")

    # Resend: the receiver gets the stored bytes again, and the page shows the new attempt.
    await page.get_by_role("button", name="Resend").click()
    await expect(page.get_by_text("Resend queued")).to_be_visible()
    await receiver.wait_for(lambda r: len(r) >= 2)
    assert receiver.received[1].body == receiver.received[0].body == event.body
    deadline = time.monotonic() + WAIT_MS / 1000
    while await attempts.count() < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
        await page.reload()
    await expect(attempts).to_have_count(2)
    await expect(attempts.first).to_have_attribute("data-trigger", "resend")
    await shots.take(page, "event")
    await context.close()


async def _answers(service: Running, secret: str, path: str) -> int:
    async with aiohttp.ClientSession(base_url=service.base_url) as session:
        return (await Api(session, secret).call("GET", path))[0]


async def test_api_keys_in_a_browser(
    browser: Browser, service: Running, ctx: Context, shots: Shots
) -> None:
    key, _ = await ctx.api_keys.create("test", "acme")
    context = await _context(browser, service)
    page = await context.new_page()
    await _sign_in(page, key)
    await page.get_by_role("link", name="Developer").click()
    await page.get_by_role("link", name="API keys").click()
    await expect(page).to_have_url(re.compile(r"/dashboard/api_keys$"))
    await expect(page.locator("tr.key")).to_have_count(1)

    await page.get_by_role("link", name="Create key").click()
    await page.get_by_label("Name (optional)").fill("Till 3")
    await page.get_by_label("Restricted: only the permissions chosen below").check()
    await page.get_by_label("payments:read", exact=True).check()
    await page.get_by_label("terminals:write", exact=True).check()
    await page.get_by_role("button", name="Create key").click()
    await expect(page.get_by_role("heading", name="API key created")).to_be_visible()
    first = await page.locator("#secret").inner_text()
    assert first.startswith("svc_test_")
    assert await _answers(service, first, "/v1/payments/pay_nothing") == 404
    assert await _answers(service, first, "/v1/webhook_endpoints") == 403

    await page.get_by_role("link", name="Back to API keys").click()
    till = page.locator("tr.key", has_text="Till 3")
    await expect(till).to_contain_text("payments:read, terminals:write")
    await expect(page.get_by_text(first)).to_have_count(0)
    await shots.take(page, "api-keys")

    # Roll, the old secret working for another hour: both work, the new one shown once.
    await till.get_by_role("link", name="Roll key…").click()
    await page.get_by_label("in 1 hour", exact=True).check()
    await page.get_by_role("button", name="Roll key").click()
    await expect(page.get_by_role("heading", name="API key rolled")).to_be_visible()
    second = await page.locator("#secret").inner_text()
    assert second.startswith("svc_test_") and second != first
    for secret in (first, second):
        assert await _answers(service, secret, "/v1/payments/pay_nothing") == 404

    # Revoke: asked first, then both secrets answer 401.
    await page.get_by_role("link", name="Back to API keys").click()
    await till.get_by_role("link", name="Revoke key…").click()
    await expect(page.get_by_role("heading", name="Revoke API key")).to_be_visible()
    assert await _answers(service, second, "/v1/payments/pay_nothing") == 404
    await page.get_by_role("button", name="Revoke key").click()
    await expect(page.get_by_text("API key revoked")).to_be_visible()
    await expect(till).to_contain_text("Revoked")
    await expect(till.get_by_role("link")).to_have_count(0)
    started = time.monotonic()
    for secret in (first, second):
        while await _answers(service, secret, "/v1/payments/pay_nothing") != 401:
            assert time.monotonic() - started < 2, "the revoked key still works"
            await asyncio.sleep(0.05)
    await expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    await context.close()


async def test_csrf_and_other_organisations_in_a_browser(
    browser: Browser, service: Running, ctx: Context
) -> None:
    acme_key, acme = await ctx.api_keys.create("test", "acme")
    other_key, _ = await ctx.api_keys.create("test", "other")
    from svc.webhooks import flow

    async with ctx.unit() as unit:
        endpoint = await flow.create(
            ctx, unit, acme, "https://hooks.example.com/acme", ["payment.succeeded"], ""
        )
    context = await _context(browser, service)
    page = await context.new_page()
    await _sign_in(page, other_key)

    response = await page.goto(f"/dashboard/webhooks/{endpoint.id}")
    assert response is not None and response.status == 404
    await expect(page.get_by_role("heading", name="Not found")).to_be_visible()
    await expect(page.get_by_text("hooks.example.com")).to_have_count(0)

    # The browser's own cookies, but no CSRF token: refused, nothing sent.
    refused = await page.request.post(
        f"/dashboard/webhooks/{endpoint.id}/test", form={"note": "no token"}
    )
    assert refused.status == 403
    own = await context.new_page()
    await _sign_in(own, acme_key)
    refused = await own.request.post(f"/dashboard/webhooks/{endpoint.id}/delete", form={})
    assert refused.status == 403 and "token" in await refused.text()
    await own.goto(f"/dashboard/webhooks/{endpoint.id}")
    await expect(own.get_by_role("heading", name="https://hooks.example.com/acme")).to_be_visible()
    await context.close()


async def test_the_api_reference_in_a_browser(
    browser: Browser, service: Running, shots: Shots
) -> None:
    context = await _context(browser, service)
    page = await context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url))

    response = await page.goto("/docs")
    assert response is not None and response.status == 200
    assert "img-src 'self' data:;" in response.headers["content-security-policy"]
    for method, path in [
        ("post", "/v1/payments"),
        ("get", "/v1/payments"),
        ("get", "/v1/payments/{payment_id}"),
        ("post", "/v1/payments/{payment_id}/cancel"),
        ("post", "/v1/terminals/{terminal_id}/payments"),
    ]:
        operation = page.locator(f".opblock-{method} .opblock-summary-path[data-path='{path}']")
        await expect(operation).to_be_visible()

    # An operation opens with its parameters, read from the same /openapi.json.
    await shots.take(page, "reference", full_page=False)
    await page.locator(".opblock-post .opblock-summary-path[data-path='/v1/payments']").click()
    await expect(page.locator(".parameters").get_by_text("Idempotency-Key").first).to_be_visible()
    assert errors == []
    assert service.base_url + "/openapi.json" in fetched
    elsewhere = [u for u in fetched if not u.startswith((service.base_url + "/", "data:"))]
    assert elsewhere == [], "the page loads nothing from another origin"
    await context.close()
