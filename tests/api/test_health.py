"""``GET /health`` reports the installed service's version, the one ``pyproject.toml`` names,
apart from the OpenAPI document's own ``info.version``."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tests.conftest import Api

PYPROJECT = Path(__file__).parents[2] / "pyproject.toml"


def project_version() -> str:
    return str(tomllib.loads(PYPROJECT.read_text())["project"]["version"])


async def test_health_reports_the_service_version_on_both_ports(api: Api) -> None:
    for base in ("", api.ops_url):
        async with api.session.get(base + "/health") as response:
            assert response.status == 200
            body = await response.json()
        # The spec's two members and no other.
        assert body == {"status": "ok", "version": project_version()}


async def test_the_openapi_document_keeps_its_own_version(api: Api) -> None:
    async with api.session.get("/openapi.json") as response:
        document = await response.json()
    assert document["openapi"] == "3.1.0"
    assert document["info"]["version"] == "1.0.0"
