"""Rendering dashboard pages: one autoescaping Jinja2 environment per app, the filters the
templates use, and the headers every dashboard response carries."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
from aiohttp import web

from api.dashboard.sessions import Session
from api.problems import InvalidInput
from svc.portal.model import PortalSession
from svc.webhooks.certificates import summary as certificate

TEMPLATES = web.AppKey("dashboard_templates", jinja2.Environment)
ROOT = web.AppKey("pages_root", str)
"""Where an app of pages is mounted (``/dashboard``, ``/portal``): its links and redirects
start with it, so the portal serves the dashboard's webhook pages as they are."""
SESSION = web.RequestKey("dashboard_session", Session)
PORTAL = web.RequestKey("portal_session", PortalSession)
PAGE_SIZE = 25
STATIC_DIR = Path(__file__).parent / "static"

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
"""No inline script or style anywhere: scripts and styles come only from ``/dashboard/static``."""

SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}

NOTICES = {
    "test_sent": "Test event sent: its delivery shows up in the log within seconds.",
    "resent": "Resend queued: the new attempt shows up in the log within seconds.",
    "deleted": "Endpoint deleted.",
    "updated": "Endpoint saved: new events are delivered as it now says.",
    "disabled": "Endpoint disabled: it gets no new deliveries; its events are still stored.",
    "enabled": "Endpoint enabled: new events are delivered again. Recover sends what it missed.",
    "replaying": "Endpoint enabled: the events skipped while it was disabled are delivered "
    "again, oldest first; see the log.",
    "endpoint_disabled": "The endpoint is disabled: enable it first.",
    "recovering": "Recover queued: missed events are sent again, oldest first; see the log.",
    "nothing_to_recover": "Nothing to recover: every event of that window was delivered.",
    "recover_window": "Choose how far back to recover.",
    "key_revoked": "API key revoked: its secrets no longer work.",
    "roll_revoked": "That key is revoked: a revoked key cannot be rolled.",
    "signed_out": "You are signed out.",
    "expired": "Your session has ended. Sign in again.",
    "key_ended": "Your session has ended: its API key was revoked or has expired. Sign in with "
    "another key.",
}
"""Messages a redirect may ask for with ``?notice=``; the query never carries text itself."""


def when(value: int | str | None, zone: bool = True) -> str:
    """A time as ``2025-01-31 14:05:09 UTC`` (without the zone where a heading names it), from
    epoch milliseconds or an ISO 8601 text."""
    if value is None or value == "":
        return "—"
    if isinstance(value, int):
        moment = datetime.fromtimestamp(value / 1000, tz=UTC)
    else:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S" + (" UTC" if zone else ""))


def iso(value: int) -> str:
    """Epoch milliseconds as an ISO 8601 text for ``<time datetime>``."""
    return datetime.fromtimestamp(value / 1000, tz=UTC).isoformat(timespec="milliseconds")


def money(rappen: int, currency: str = "CHF") -> str:
    return f"{currency} {rappen // 100:,}.{rappen % 100:02d}".replace(",", "'")


def duration(ms: float | None) -> str:
    if ms is None:
        return "—"
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def environment() -> jinja2.Environment:
    """The templates of ``api/dashboard/templates``, autoescaped, strict about unknown names."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("api.dashboard", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(when=when, iso=iso, money=money, duration=duration, certificate=certificate)
    return env


def render(
    request: web.Request,
    template: str,
    status: int = 200,
    csrf_token: str | None = None,
    section: str = "",
    **values: Any,
) -> web.Response:
    """A page: ``template`` with the session (if any, a dashboard's or a portal's), its CSRF
    token and a notice."""
    session, portal = request.get(SESSION), request.get(PORTAL)
    if csrf_token is None:
        signed_in = session or portal
        csrf_token = signed_in.csrf if signed_in is not None else ""
    text = (
        request.app[TEMPLATES]
        .get_template(template)
        .render(
            session=session,
            portal=portal,
            root=request.app[ROOT],
            csrf_token=csrf_token,
            path=request.path,
            section=section,
            notice=NOTICES.get(request.query.get("notice", "")),
            **values,
        )
    )
    return web.Response(text=text, status=status, content_type="text/html", charset="utf-8")


def form_text(value: object) -> str:
    """A form field's value as the form shows it again ("" for a file or nothing)."""
    return value if isinstance(value, str) else ""


def errors_by_field(refused: InvalidInput) -> dict[str, str]:
    """The first error of each field of a refused input, as a form shows it under that field:
    an item's error (``emails[2]``, ``headers[Host]``) under its list or object, and a
    filter's naming its part (``[data.amount][$regex]: …``)."""
    shown: dict[str, str] = {}
    for e in reversed(refused.errors):
        field, bracket, part = e.field.partition("[")
        shown[field] = f"{bracket}{part}: {e.detail}" if field == "filter" and part else e.detail
    return shown


def page_url(request: web.Request, path: str) -> str:
    """``path`` (``/webhooks/…``) within the app of pages serving ``request``."""
    return f"{request.app[ROOT]}{path}"


def redirect(location: str) -> web.Response:
    """303 See Other: the browser GETs ``location`` after a form's POST."""
    return web.Response(status=303, headers={"Location": location})
