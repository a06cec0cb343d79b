"""``POST /v1/portal_sessions``: a one-time link to the embeddable portal.

A platform's backend asks for it with its partner key and ``Svc-Organisation`` (or an
organisation with its own key), then puts the ``url`` in an iframe of the page allowed by
``frame_origin``. The link opens once, within ``expires_at``; the portal it opens manages the
organisation's endpoints and deliveries in the key's environment (``api.dashboard.portal``).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from aiohttp import web

from api.input.fields import optional_json
from api.input.portal import new_portal_session
from api.middleware.auth import key_of, scope_of
from api.openapi import json_content, ok, ref
from api.routing import Routes
from svc.context import Context
from svc.envelope import iso_ms
from svc.http import CONTEXT, json_response
from svc.portal import flow

OPEN_PATH = "/portal/open/"
"""The portal's path that redeems a link's token (the token follows it)."""

routes = Routes("Portal")


def link(ctx: Context, token: str) -> str:
    """The portal link of ``token``, on the service's public address (``SVC_DASHBOARD_URL``)."""
    public = urlsplit(ctx.settings.dashboard_url)
    return f"{public.scheme}://{public.netloc}{OPEN_PATH}{token}"


@routes.post(
    "/v1/portal_sessions",
    "portal:write",
    {
        "operationId": "create_portal_session",
        "summary": "Make a one-time link to the embeddable portal",
        "requestBody": {"required": False, "content": json_content(ref("PortalSessionCreate"))},
        "responses": ok("PortalSession", "Created: the link, for one use.", "201"),
    },
    "415",
)
async def create_portal_session(request: web.Request) -> web.Response:
    origin, branding = new_portal_session(await optional_json(request))
    ctx: Context = request.app[CONTEXT]
    token, expires_ms = await flow.open_link(
        ctx, scope_of(request), key_of(request).id, origin, branding
    )
    body = {"object": "portal_session", "url": link(ctx, token), "expires_at": iso_ms(expires_ms)}
    return json_response(body, status=201)
