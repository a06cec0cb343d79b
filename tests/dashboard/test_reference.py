"""The API reference page at /docs: served with its files by the API itself, no inline script,
the dashboard's Content-Security-Policy plus data: images, and nothing else served."""

from __future__ import annotations

import re

import aiohttp
from multidict import CIMultiDictProxy

from api.dashboard.rendering import CSP as DASHBOARD_CSP
from tests.conftest import Running


async def _get(service: Running, path: str) -> tuple[int, str, bytes, CIMultiDictProxy[str]]:
    async with aiohttp.ClientSession(base_url=service.base_url) as session:
        async with session.get(path, allow_redirects=False) as response:
            return response.status, response.content_type, await response.read(), response.headers


async def test_the_page_loads_only_its_own_files_and_scripts(service: Running) -> None:
    status, content_type, body, headers = await _get(service, "/docs")
    assert (status, content_type) == (200, "text/html")
    text = body.decode()
    policy = headers["Content-Security-Policy"]
    assert policy == DASHBOARD_CSP.replace("img-src 'self';", "img-src 'self' data:;")
    assert headers["X-Frame-Options"] == "DENY"
    scripts = re.findall(r"<script\b[^>]*>(.*?)</script>", text, re.S)
    assert len(scripts) == 2 and all(body.strip() == "" for body in scripts), "inline script"
    assert "style=" not in text and "<style" not in text
    loaded = re.findall(r'(?:src|href)="([^"]+)"', text)
    assert loaded and all(url.startswith("/") for url in loaded), loaded
    assert 'data-document="/openapi.json"' in text
    for url in loaded:
        status, _, _, _ = await _get(service, url)
        assert status == 200, url


async def test_only_the_pages_files_are_served(service: Running) -> None:
    status, content_type, _, headers = await _get(service, "/docs/static/swagger-ui-bundle.js")
    assert status == 200 and content_type in ("text/javascript", "application/javascript")
    assert "Content-Security-Policy" in headers
    for name in ("index.html", "swagger-initializer.js", "..%2Fdashboard%2F__init__.py"):
        status, _, _, _ = await _get(service, f"/docs/static/{name}")
        assert status == 404, name
