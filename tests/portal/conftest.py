"""Portal fixtures: a service that may send cookies without ``Secure`` to plain http on
127.0.0.1 (as ``make run`` does), a link made through the API, and a browser-like client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest

from svc.settings import Settings
from tests.conftest import Api
from tests.dashboard.conftest import Dashboard


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return replace(settings, dashboard_secure_cookies=False)


async def portal_link(api: Api, **body: Any) -> dict[str, Any]:
    """A portal link of ``api``'s scope (201), made with ``body``."""
    status, made = await api.call("POST", "/v1/portal_sessions", json=body)
    assert status == 201, made
    assert isinstance(made, dict)
    return made


@pytest.fixture
async def browsers() -> AsyncIterator[list[Dashboard]]:
    """Clients that keep cookies as a browser does; closed at the end."""
    made: list[Dashboard] = []
    yield made
    for client in made:
        await client.session.close()


async def opened(base_url: str, url: str, browsers: list[Dashboard]) -> Dashboard:
    """A new client that opened the portal link ``url`` (and landed on its endpoints)."""
    client = Dashboard(base_url)
    browsers.append(client)
    page = await client.get(url.removeprefix(base_url))
    assert page.status == 200 and page.url.endswith("/portal/webhooks"), page.text
    return client
