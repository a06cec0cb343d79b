"""The interactive API reference at ``GET /docs``: Swagger UI rendering ``/openapi.json``.

Like the dashboard it is a page for people, outside the API and its description, mounted by
``api.dashboard.install``.

Swagger UI comes from the ``swagger-ui-bundle-v2`` package and is served by this process, so
the page loads nothing from another origin. It keeps the dashboard's Content-Security-Policy
with one addition, ``img-src data:``: Swagger UI's style sheet draws its icons (the arrows of
the operation list, the copy button) as ``data:`` images. The script that starts Swagger UI is a
file of its own, so no inline script is needed.
"""

from __future__ import annotations

from pathlib import Path

from aiohttp import web
from swagger_ui_bundle import swagger_ui_path

from api.dashboard import rendering

PATH = "/docs"
DOCUMENT = "/openapi.json"
"""Where the API serves the OpenAPI description (``api.routes.ops``)."""
STATIC = "/docs/static"
HERE = Path(__file__).parent / "reference_files"
SWAGGER_UI = Path(str(swagger_ui_path))

FILES = {
    "swagger-ui-bundle.js": SWAGGER_UI / "swagger-ui-bundle.js",
    "swagger-ui.css": SWAGGER_UI / "swagger-ui.css",
    "favicon-32x32.png": SWAGGER_UI / "favicon-32x32.png",
    "reference.js": HERE / "reference.js",
    "reference.css": HERE / "reference.css",
}
"""Every file the page loads, by the name it is served under; nothing else is served."""

CSP = rendering.CSP.replace("img-src 'self';", "img-src 'self' data:;")
"""The dashboard's policy, and ``data:`` images for Swagger UI's icons."""

SECURITY_HEADERS = {**rendering.SECURITY_HEADERS, "Content-Security-Policy": CSP}


def page(static: str, document: str) -> str:
    """The reference page, loading its files from ``static`` and rendering ``document``."""
    template = (HERE / "reference.html").read_text()
    return template.replace("{static}", static).replace("{document}", document)


def routes() -> list[web.RouteDef]:
    """The page and its files; the page is rendered once, when the app is built."""
    body = page(STATIC, DOCUMENT)

    async def reference(request: web.Request) -> web.Response:
        response = web.Response(text=body, content_type="text/html")
        response.headers.update(SECURITY_HEADERS)
        return response

    async def static(request: web.Request) -> web.StreamResponse:
        path = FILES.get(request.match_info["name"])
        if path is None:
            raise web.HTTPNotFound()
        response = web.FileResponse(path)
        response.headers.update(SECURITY_HEADERS)
        return response

    return [
        web.get(PATH, reference, allow_head=False),
        web.get(STATIC + "/{name}", static, allow_head=False),
    ]
