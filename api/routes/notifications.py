"""Notification settings: where the organisation's email notices about its endpoints go.

Shapes:

- ``GET /v1/notification_settings`` — 200 ``{"object": "notification_settings",
  "environment", "emails": [...], "email_enabled"}`` (no addresses named yet: ``[]``).
- ``PUT /v1/notification_settings`` ``{"emails": [...]}`` — replaces the addresses (at most
  ten, each an address once) and answers as the GET does.
"""

from __future__ import annotations

from aiohttp import web

from api.input.fields import json_object
from api.input.notifications import emails
from api.middleware.auth import scope_of
from api.openapi import json_content, ok, ref
from api.routing import Routes
from svc.context import Context
from svc.http import CONTEXT, json_response
from svc.notices import flow
from svc.orgs.model import Scope

routes = Routes("Notifications")


def _view(ctx: Context, scope: Scope, addresses: list[str]) -> web.Response:
    return json_response(
        {
            "object": "notification_settings",
            "environment": scope.env,
            "emails": addresses,
            "email_enabled": bool(ctx.settings.smtp_host),
        }
    )


@routes.get(
    "/v1/notification_settings",
    "webhooks:read",
    {
        "operationId": "read_notification_settings",
        "summary": "Where notices about this environment's endpoints are mailed",
        "responses": ok("NotificationSettings", "The notification settings."),
    },
)
async def read_settings(request: web.Request) -> web.Response:
    ctx: Context = request.app[CONTEXT]
    scope = scope_of(request)
    return _view(ctx, scope, await ctx.notices.emails(scope))


@routes.put(
    "/v1/notification_settings",
    "webhooks:write",
    {
        "operationId": "update_notification_settings",
        "summary": "Name the addresses notices about this environment's endpoints go to",
        "requestBody": {
            "required": True,
            "content": json_content(ref("NotificationSettingsUpdate")),
        },
        "responses": ok("NotificationSettings", "The notification settings, as stored."),
    },
    "400",
    "413",
    "415",
    "422",
)
async def update_settings(request: web.Request) -> web.Response:
    ctx: Context = request.app[CONTEXT]
    scope = scope_of(request)
    wanted = emails(await json_object(request))
    return _view(ctx, scope, await flow.set_emails(ctx, scope, wanted))
