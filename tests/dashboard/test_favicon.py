"""Browsers ask every site for /favicon.ico: the service answers with its icon, not a 404."""

from __future__ import annotations

import aiohttp

from tests.conftest import Running


async def test_the_favicon_is_served(service: Running) -> None:
    async with aiohttp.ClientSession(base_url=service.base_url) as session:
        async with session.get("/favicon.ico", allow_redirects=False) as response:
            assert response.status == 200
            assert response.content_type.startswith("image/"), response.content_type
            assert "max-age" in response.headers["Cache-Control"]
            icon = await response.read()
    assert icon[:4] == b"\x00\x00\x01\x00", "an ICO file"


async def test_the_problems_page_loads_its_style_sheet(service: Running) -> None:
    """The page a Problem's type leads to is styled like the dashboard, signed in or not."""
    async with aiohttp.ClientSession(base_url=service.base_url) as session:
        async with session.get("/problems") as response:
            assert response.status == 200
            page = await response.text()
        assert 'href="/dashboard/static/dashboard.css"' in page
        async with session.get("/dashboard/static/dashboard.css") as response:
            assert response.status == 200
