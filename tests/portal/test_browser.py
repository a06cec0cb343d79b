"""The portal in Chromium, inside an iframe of a platform's page served from another local
origin (another port of 127.0.0.1): opened by its one-time link, an endpoint created, a test
delivery seen in the log and resent; the same link refused the second time; a page of an
origin other than the link's frame_origin cannot frame it."""

from __future__ import annotations

import html
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from aiohttp import web
from playwright.async_api import Browser, expect

from harness.ports import free_port
from harness.receivers import Receiver
from tests.conftest import Api, Running
from tests.dashboard.conftest import SCREENSHOTS, Shots
from tests.portal.conftest import portal_link

pytestmark = pytest.mark.browser

WAIT_MS = 10_000


async def no_icon(request: web.Request) -> web.Response:
    return web.Response(status=204)


@asynccontextmanager
async def platform(
    api: Api, framed_by: str | None = None, **branding: str
) -> AsyncIterator[tuple[str, list[str]]]:
    """A platform's page on its own port: each load asks the service for a new portal link
    framed by this origin (or by ``framed_by``), or replays the last one with ``?again``;
    yields its origin and the links it handed out."""
    port = free_port()
    origin = f"http://127.0.0.1:{port}"
    links: list[str] = []

    async def page(request: web.Request) -> web.Response:
        if "again" not in request.query or not links:
            made = await portal_link(api, frame_origin=framed_by or origin, **branding)
            links.append(made["url"])
        text = (
            "<!doctype html><title>Platform</title><h1>Platform: webhooks</h1>"
            f'<iframe src="{html.escape(links[-1])}" title="Webhooks" '
            'width="1180" height="1000"></iframe>'
        )
        return web.Response(text=text, content_type="text/html")

    app = web.Application()
    app.router.add_get("/", page)
    app.router.add_get("/favicon.ico", no_icon)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield origin, links
    finally:
        await runner.cleanup()


async def test_the_portal_in_a_platforms_iframe(
    browser: Browser, service: Running, api: Api, receiver: Receiver
) -> None:
    context = await browser.new_context(viewport={"width": 1280, "height": 1100})
    context.set_default_timeout(WAIT_MS)
    page = await context.new_page()
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if m.type == "error" else None)
    async with platform(api, name="Platform", accent_color="#7b2cbf") as (origin, links):
        await page.goto(origin + "/")
        portal = page.frame_locator("iframe")
        await expect(portal.get_by_role("heading", name="Webhooks")).to_be_visible()
        await expect(portal.get_by_text("Platform").first).to_be_visible()

        await portal.get_by_role("link", name="Add endpoint").click()
        await portal.get_by_label("Endpoint URL").fill(receiver.url("/hook"))
        await portal.get_by_label("payment.succeeded").check()
        await portal.get_by_role("button", name="Create endpoint").click()
        secret = await portal.locator("#secret").inner_text()
        assert secret.startswith("whsec_")
        await portal.get_by_role("link", name="Open the endpoint").click()

        await portal.get_by_role("button", name="Send test event").click()
        await receiver.wait_for(lambda r: len(r) >= 1)
        first = portal.locator("tr.delivery")
        await expect(first).to_have_count(1)
        await expect(first.locator(".status-code")).to_have_text("204")
        event_id = await first.get_attribute("data-event-id")
        assert event_id is not None
        await first.get_by_role("button", name="Resend").click()
        await receiver.wait_for(lambda r: len(r) >= 2)
        attempts = portal.locator(f'tr.delivery[data-event-id="{event_id}"]')
        await expect(attempts).to_have_count(2)
        await expect(attempts.first.locator(".status-code")).to_have_text("204")
        await portal.get_by_role("link", name="Endpoints").click()
        await portal.get_by_role("link", name=receiver.url("/hook")).click()
        await expect(portal.locator("#delivery-health figcaption")).to_contain_text("2 succeeded")
        await Shots(os.environ.get(SCREENSHOTS)).take(page, "portal", full_page=False)
        assert refused == [], refused

        # The same link a second time: a refusal page, shown in its frame.
        await page.goto(origin + "/?again")
        await expect(portal.get_by_text("opened before or has expired")).to_be_visible()
        assert len(links) == 1

    # Another origin's page framing a link made for the platform's origin is refused by the
    # browser: the portal's frame-ancestors names the platform alone.
    async with platform(api) as (allowed, _), platform(api, allowed) as (other, _):
        blocked = page.expect_console_message(lambda m: "frame-ancestors" in m.text)
        async with blocked:
            await page.goto(other + "/")
        await expect(portal.get_by_role("heading", name="Webhooks")).to_have_count(0)
    await context.close()
