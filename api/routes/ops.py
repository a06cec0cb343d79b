"""Routes without credentials: ``/health``, ``/ready`` and ``/metrics`` (as every process
serves them) and the OpenAPI description at ``GET /openapi.json``."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from svc.http import ops_routes

PATH = "/openapi.json"


def openapi_route(document: dict[str, Any]) -> web.RouteDef:
    """The route serving ``document``, serialised once, when the app is built."""
    body = orjson.dumps(document)

    async def openapi(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    return web.get(PATH, openapi, allow_head=False)


def routes(document: dict[str, Any]) -> list[web.RouteDef]:
    """Every route without credentials; ``document`` is the OpenAPI description."""
    return [*ops_routes(), openapi_route(document)]
