"""Routes without credentials: ``/health``, ``/ready`` and ``/metrics`` (as every process
serves them) and the OpenAPI description at ``GET /openapi.json``."""

from __future__ import annotations

import orjson
from aiohttp import web

from api.description import document
from api.routes.checkout import checkout_path
from svc.context import Context
from svc.http import ops_routes

PATH = "/openapi.json"


def openapi_route(ctx: Context) -> web.RouteDef:
    """The route; the document is built and serialised once, when the app is built."""
    body = orjson.dumps(document(checkout_path(ctx)))

    async def openapi(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    return web.get(PATH, openapi, allow_head=False)


def routes(ctx: Context) -> list[web.RouteDef]:
    """Every route without credentials."""
    return [*ops_routes(), openapi_route(ctx)]
