"""Developer → Notifications: the addresses this mode's email notices go to (an endpoint
failing, disabled, or an event whose retries ran out), one per line. The same use case and
input checks as ``PUT /v1/notification_settings``; links stay within the app of pages serving
them, so another app (the portal) can serve them too."""

from __future__ import annotations

from aiohttp import web

from api.dashboard.rendering import errors_by_field, form_text, render
from api.input.fields import form_fields
from api.input.notifications import emails
from api.middleware.auth import scope_of
from api.problems import InvalidInput
from svc.context import Context
from svc.http import CONTEXT
from svc.notices import flow
from svc.notices.model import MAX_EMAILS

routes = web.RouteTableDef()


def _page(
    request: web.Request, text: str, errors: dict[str, str] | None = None, saved: bool = False
) -> web.Response:
    ctx: Context = request.app[CONTEXT]
    return render(
        request,
        "notifications.html",
        status=422 if errors else 200,
        section="developer",
        text=text,
        most=MAX_EMAILS,
        email_enabled=bool(ctx.settings.smtp_host),
        errors=errors or {},
        saved=saved,
    )


@routes.get("/notifications", allow_head=False)
async def show_settings(request: web.Request) -> web.Response:
    addresses = await request.app[CONTEXT].notices.emails(scope_of(request))
    return _page(request, "\n".join(addresses))


@routes.post("/notifications")
async def save_settings(request: web.Request) -> web.Response:
    text = form_text((await form_fields(request)).get("emails"))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    try:
        wanted = emails({"emails": lines})
    except InvalidInput as refused:
        return _page(request, text, errors=errors_by_field(refused))
    saved = await flow.set_emails(request.app[CONTEXT], scope_of(request), wanted)
    return _page(request, "\n".join(saved), saved=True)
