"""Dashboard fixtures: a service that may send cookies without ``Secure`` to plain http on
127.0.0.1 (as ``make run`` does), and an HTTP client that signs in and keeps cookies the way
a browser does."""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path

import aiohttp
import pytest
from multidict import CIMultiDictProxy
from playwright.async_api import Page as PlaywrightPage

from svc.context import Context
from svc.ids import new_id
from svc.settings import Settings
from tests.conftest import Api, Running

TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


@pytest.fixture
def settings(settings: Settings, request: pytest.FixtureRequest) -> Settings:
    """The suite's settings with SVC_DASHBOARD_SECURE_COOKIES=false, unless a test's
    ``@pytest.mark.settings`` says otherwise."""
    marker = request.node.get_closest_marker("settings")
    if marker is not None and "dashboard_secure_cookies" in marker.kwargs:
        return settings
    return replace(settings, dashboard_secure_cookies=False)


@dataclass(frozen=True)
class Page:
    """A response as the test reads it."""

    status: int
    text: str
    headers: CIMultiDictProxy[str]
    url: str

    @property
    def token(self) -> str:
        """The CSRF token of the page's forms."""
        found = TOKEN.search(self.text)
        assert found is not None, "no form with a CSRF token on this page"
        return found.group(1)


class Dashboard:
    """One browser's worth of cookies against the running service."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        # unsafe: keep cookies of an IP-address host (127.0.0.1), as browsers do.
        self.session = aiohttp.ClientSession(
            base_url=base_url, cookie_jar=aiohttp.CookieJar(unsafe=True)
        )

    async def get(self, path: str, follow: bool = True) -> Page:
        async with self.session.get(path, allow_redirects=follow) as response:
            return Page(response.status, await response.text(), response.headers, str(response.url))

    async def post(
        self, path: str, data: dict[str, str] | list[tuple[str, str]], follow: bool = True
    ) -> Page:
        """A form's POST; a list of pairs sends a field more than once (checkboxes)."""
        async with self.session.post(path, data=data, allow_redirects=follow) as response:
            return Page(response.status, await response.text(), response.headers, str(response.url))

    async def sign_in(self, key: str) -> Page:
        form = await self.get("/dashboard/login")
        return await self.post(
            "/dashboard/login", {"api_key": key, "csrf_token": form.token}, follow=False
        )

    def cookie(self, name: str) -> str | None:
        found = [c for c in self.session.cookie_jar if c.key == name]
        return found[0].value if found else None


MakeDashboard = Callable[..., Awaitable[tuple[Dashboard, str]]]


@pytest.fixture
async def make_dashboard(service: Running, ctx: Context) -> AsyncIterator[MakeDashboard]:
    """``await make_dashboard(env="test", org="acme")``: a client signed in with a new key of
    that organisation and environment, and the key."""
    made: list[Dashboard] = []

    async def make(env: str = "test", org: str = "acme") -> tuple[Dashboard, str]:
        key, _ = await ctx.api_keys.create(env, org)
        dashboard = Dashboard(service.base_url)
        made.append(dashboard)
        signed_in = await dashboard.sign_in(key)
        assert signed_in.status == 303, signed_in.text
        return dashboard, key

    yield make
    for dashboard in made:
        await dashboard.session.close()


SCREENSHOTS = "SVC_SCREENSHOTS"
"""Where the browser tests save screenshots of the main pages (``make screenshots``)."""


class Shots:
    """Saves screenshots when ``SVC_SCREENSHOTS`` names a folder; otherwise does nothing."""

    def __init__(self, folder: str | None) -> None:
        self.folder = Path(folder) if folder else None
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)

    async def take(self, page: PlaywrightPage, name: str, full_page: bool = True) -> None:
        if self.folder is None:
            return
        await page.screenshot(path=str(self.folder / f"{name}.png"), full_page=full_page)


@pytest.fixture
def shots() -> Shots:
    return Shots(os.environ.get(SCREENSHOTS))


async def paid_payment(service: Running, key: str, amount: int) -> str:
    """A payment created through the API and paid on the sandbox checkout page."""
    api = Api(aiohttp.ClientSession(base_url=service.base_url), key)
    try:
        status, body = await api.call(
            "POST",
            "/v1/payments",
            data={"amount": str(amount), "success_url": "https://shop.example.com/done"},
            headers={"Idempotency-Key": new_id("idem")},
        )
        assert status == 201 and isinstance(body, dict), body
        async with api.session.post(
            body["checkout_url"], data={"action": "pay"}, allow_redirects=False
        ) as response:
            assert response.status == 303
        return str(body["id"])
    finally:
        await api.session.close()
