"""Routes without credentials on the public port: liveness at ``/health`` and the OpenAPI
description at ``GET /openapi.json``. Readiness and metrics are served on the ops port only
(``svc.http.ops_app``)."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from svc.http import health

PATH = "/openapi.json"


def openapi_route(document: dict[str, Any]) -> web.RouteDef:
    """The route serving ``document``, serialised once, when the app is built."""
    body = orjson.dumps(document)

    async def openapi(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    return web.get(PATH, openapi, allow_head=False)


def routes(document: dict[str, Any]) -> list[web.RouteDef]:
    """Every route without credentials; ``document`` is the OpenAPI description."""
    return [web.get("/health", health, allow_head=False), openapi_route(document)]
