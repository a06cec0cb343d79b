"""Serves the OpenAPI description at ``GET /openapi.json`` (no credential needed)."""

from __future__ import annotations

import orjson
from aiohttp import web

from api.checkout import checkout_path
from api.description import document
from svc.context import Context

PATH = "/openapi.json"


def openapi_route(ctx: Context) -> web.RouteDef:
    """The route; the document is built and serialised once, when the app is built."""
    body = orjson.dumps(document(checkout_path(ctx)))

    async def openapi(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    return web.get(PATH, openapi, allow_head=False)
