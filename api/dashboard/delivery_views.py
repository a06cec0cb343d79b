"""An endpoint's delivery log: its page of attempts (newest first, paged with the API's
cursors, searched with the API's filters taken from the page's URL), the fragment
``static/deliveries.js`` polls to keep the first page live, and the Resend button of each
event, which delivers the stored bytes again to this endpoint."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from api.dashboard.lookups import scoped_endpoint, scoped_event
from api.dashboard.rendering import PAGE_SIZE, page_url, redirect, render
from api.input.deliveries import SEARCHED, log_filter
from svc.context import Context
from svc.envelope import EVENT_TYPES
from svc.events.model import LOGGED_OUTCOMES
from svc.http import CONTEXT
from svc.webhooks import flow
from svc.webhooks.errors import EndpointDisabled
from svc.webhooks.model import Endpoint

VERSION_HEADER = "Svc-Log-Version"
POLL_MS = 2000

routes = web.RouteTableDef()


@dataclass(frozen=True, slots=True)
class LogPage:
    """One page of an endpoint's delivery log."""

    records: list[dict[str, Any]]
    next_cursor: str | None
    version: str
    """Changes whenever the page would show something else; the poller swaps only then."""
    searched: dict[str, str]
    """The filters of the page's URL, as given (for the filter form)."""
    filter: str
    """The same as a query string (kept by the pager and the poller)."""
    outcomes: tuple[str, ...] = LOGGED_OUTCOMES
    event_types: tuple[str, ...] = EVENT_TYPES


async def log_page(request: web.Request, endpoint: Endpoint, cursor: str | None) -> LogPage:
    """A page of the endpoint's log with the filters of the request's query (``InvalidInput``
    naming a bad one, as the API answers)."""
    # The filter form sends its empty fields too: those filter nothing.
    searched = {name: request.query[name] for name in SEARCHED if request.query.get(name)}
    search = log_filter(request.clone(rel_url=request.rel_url.with_query(searched)))
    ctx: Context = request.app[CONTEXT]
    records, next_cursor = await ctx.deliveries.for_endpoint(endpoint.id, PAGE_SIZE, cursor, search)
    seen = "|".join(f"{r['id']}:{r['next_attempt_at']}" for r in records)
    version = hashlib.sha256(f"{seen}|{next_cursor}".encode()).hexdigest()[:16]
    return LogPage(records, next_cursor, version, searched, urlencode(searched))


@routes.get("/webhooks/{endpoint_id}/deliveries", allow_head=False)
async def log_fragment(request: web.Request) -> web.Response:
    """The first page of the log (with the page's filters) as an HTML fragment, for the
    poller."""
    endpoint = await scoped_endpoint(request)
    log = await log_page(request, endpoint, None)
    response = render(request, "_deliveries.html", endpoint=endpoint, log=log, paged=False)
    response.headers[VERSION_HEADER] = log.version
    return response


@routes.post("/webhooks/{endpoint_id}/events/{event_id}/resend")
async def resend_to_endpoint(request: web.Request) -> web.Response:
    """Deliver this event's stored bytes again, to this endpoint alone."""
    endpoint = await scoped_endpoint(request)
    stored = await scoped_event(request)
    ctx: Context = request.app[CONTEXT]
    try:
        async with ctx.unit() as unit:
            await flow.resend(ctx, unit, stored, endpoint)
    except EndpointDisabled:
        notice = "endpoint_disabled"
    else:
        notice = "resent"
    return redirect(page_url(request, f"/webhooks/{endpoint.id}?notice={notice}"))
