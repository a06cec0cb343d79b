"""Payments: the scope's payments newest first (paged with the API's cursors), and one payment
with its events, each event's delivery state per endpoint and a Resend button."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web

from api.dashboard.lookups import endpoint_urls, scoped_event, scoped_payment
from api.dashboard.rendering import PAGE_SIZE, redirect, render
from api.middleware.auth import scope_of
from svc.context import Context
from svc.events.model import StoredEvent
from svc.http import CONTEXT
from svc.webhooks import flow

EVENT_MARGIN_MS = 5_000
"""A payment's events are made just after the change they report: between its creation and
its last update, give or take this."""
MAX_EVENTS = 50

routes = web.RouteTableDef()


@dataclass(frozen=True, slots=True)
class EventRow:
    """An event of a payment and its delivery state at each endpoint."""

    stored: StoredEvent
    deliveries: list[dict[str, Any]]


@routes.get("/payments", allow_head=False)
async def list_payments(request: web.Request) -> web.Response:
    cursor = request.query.get("cursor") or None
    found, next_cursor = await request.app[CONTEXT].payments.page(
        scope_of(request), PAGE_SIZE, cursor
    )
    return render(
        request,
        "payments.html",
        section="payments",
        payments=found,
        next_cursor=next_cursor,
        paged=cursor is not None,
    )


@routes.get("/payments/{payment_id}", allow_head=False)
async def show_payment(request: web.Request) -> web.Response:
    payment = await scoped_payment(request)
    ctx: Context = request.app[CONTEXT]
    found = await ctx.events.about(
        scope_of(request),
        payment.id,
        payment.created_ms - EVENT_MARGIN_MS,
        payment.updated_ms + EVENT_MARGIN_MS,
        MAX_EVENTS,
    )
    rows = [
        EventRow(stored, await ctx.deliveries.statuses(stored.scope, stored.event.id))
        for stored in found
    ]
    return render(
        request,
        "payment.html",
        section="payments",
        payment=payment,
        events=rows,
        urls=await endpoint_urls(request, scope_of(request)),
        retention_days=round(ctx.settings.event_retention / 86400),
    )


@routes.post("/payments/{payment_id}/events/{event_id}/resend")
async def resend_event(request: web.Request) -> web.Response:
    """Deliver the event's stored bytes again to every endpoint subscribed to it now."""
    payment = await scoped_payment(request)
    stored = await scoped_event(request)
    ctx: Context = request.app[CONTEXT]
    async with ctx.unit() as unit:
        await flow.resend(ctx, unit, stored)
    return redirect(f"/dashboard/payments/{payment.id}?notice=resent")
