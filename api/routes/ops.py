"""Routes without credentials on the public port: liveness at ``/health`` and the OpenAPI
description at ``GET /openapi.json``. Readiness and metrics are served on the ops port only
(``svc.http.ops_app``)."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from api.openapi import json_content, ok, problems
from api.routing import Routes
from svc.http import health

PATH = "/openapi.json"
DOCUMENT = web.AppKey("openapi_document", bytes)
"""The OpenAPI description, serialised once when the app is built."""

routes = Routes("Operations")

routes.get(
    "/health",
    None,
    {
        "operationId": "health",
        "summary": "Liveness: always ok while the process serves",
        "security": [],
        "responses": {**ok("Health", "Alive."), **problems("500")},
    },
)(health)


@routes.get(
    PATH,
    None,
    {
        "operationId": "openapi",
        "summary": "This OpenAPI 3.1.0 description",
        "security": [],
        "responses": {
            "200": {
                "description": "The description.",
                "content": json_content(
                    {
                        "type": "object",
                        "required": ["openapi", "info", "paths"],
                        "properties": {
                            "openapi": {"const": "3.1.0"},
                            "info": {"type": "object"},
                            "paths": {"type": "object"},
                        },
                    }
                ),
            },
            **problems("500"),
        },
    },
)
async def openapi(request: web.Request) -> web.Response:
    return web.Response(body=request.app[DOCUMENT], content_type="application/json")


def serve(app: web.Application, document: dict[str, Any]) -> None:
    """Serve ``document`` at ``GET /openapi.json``."""
    app[DOCUMENT] = orjson.dumps(document)
