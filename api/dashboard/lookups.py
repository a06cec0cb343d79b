"""Objects named in a dashboard path, found only within the session's scope: any other id,
another organisation's or environment's included, is a 404 page exactly like a missing one."""

from __future__ import annotations

from aiohttp import web

from api.auth import scope_of
from api.errors import NotFound
from svc.events.store import StoredEvent
from svc.http import CONTEXT
from svc.ids import has_prefix, is_opaque_id
from svc.payments import Payment
from svc.webhooks.model import Endpoint


async def scoped_endpoint(request: web.Request) -> Endpoint:
    endpoint_id = request.match_info["endpoint_id"]
    endpoint = None
    if has_prefix(endpoint_id, "we"):
        endpoint = await request.app[CONTEXT].endpoints.get(scope_of(request), endpoint_id)
    if endpoint is None:
        raise NotFound("endpoint_not_found", "There is no such webhook endpoint here.")
    return endpoint


async def scoped_event(request: web.Request) -> StoredEvent:
    event_id = request.match_info["event_id"]
    scope = scope_of(request)
    stored = None
    if is_opaque_id(event_id):
        stored = await request.app[CONTEXT].events.load(event_id)
    if stored is None or (stored.org, stored.event.environment) != (scope.org, scope.env):
        raise NotFound("event_not_found", "There is no such event here (or it expired).")
    return stored


async def scoped_payment(request: web.Request) -> Payment:
    payment_id = request.match_info["payment_id"]
    payment = None
    if has_prefix(payment_id, "pay"):
        payment = await request.app[CONTEXT].payments.get_scoped(scope_of(request), payment_id)
    if payment is None:
        raise NotFound("payment_not_found", "There is no such payment here.")
    return payment
