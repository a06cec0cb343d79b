"""Objects named in a request's path, found in the request's scope only: an id of another
organisation or environment, or not of the kind's prefix, is a 404 exactly like a missing one."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from aiohttp import web

from api.middleware.auth import scope_of
from api.problems import NotFound
from svc.events.model import StoredEvent
from svc.http import CONTEXT
from svc.ids import has_prefix, is_opaque_id
from svc.payments import Payment
from svc.webhooks.model import Endpoint

T = TypeVar("T")


async def named(
    request: web.Request,
    param: str,
    prefix: str,
    load: Callable[[str], Awaitable[T | None]],
    code: str,
    detail: str,
) -> T:
    """The object whose id is the path parameter ``param``, loaded (in scope) by ``load``
    when the id has ``prefix``; else a 404 Problem ``code`` whose ``detail`` may name the id
    as ``{}``."""
    object_id = request.match_info[param]
    found = await load(object_id) if has_prefix(object_id, prefix) else None
    if found is None:
        raise NotFound(code, detail.format(object_id))
    return found


ENDPOINT_NOT_FOUND = "No webhook endpoint {} in this scope."


async def scoped_endpoint(request: web.Request, detail: str = ENDPOINT_NOT_FOUND) -> Endpoint:
    """The endpoint named in the path, of the caller's scope, or a 404 saying ``detail``."""
    endpoints, scope = request.app[CONTEXT].endpoints, scope_of(request)
    return await named(
        request,
        "endpoint_id",
        "we",
        lambda endpoint_id: endpoints.get(scope, endpoint_id),
        "endpoint_not_found",
        detail,
    )


def endpoint_not_found(endpoint_id: str) -> NotFound:
    return NotFound("endpoint_not_found", ENDPOINT_NOT_FOUND.format(endpoint_id))


async def scoped_payment(
    request: web.Request, detail: str = "No payment {} in this scope."
) -> Payment:
    """The payment named in the path, of the caller's scope, or a 404 saying ``detail``."""
    payments, scope = request.app[CONTEXT].payments, scope_of(request)
    return await named(
        request,
        "payment_id",
        "pay",
        lambda payment_id: payments.get_scoped(scope, payment_id),
        "payment_not_found",
        detail,
    )


async def scoped_event(
    request: web.Request, detail: str = "No event {} in this scope (or it expired)."
) -> StoredEvent:
    """The event named in the path, of the caller's scope, or a 404 saying ``detail``. Ours
    are ``evt_…``; a foreign producer's events keep the ids it gave them (``order-123``)."""
    event_id = request.match_info["event_id"]
    stored = None
    if is_opaque_id(event_id):  # events are identified within their scope: only its own
        stored = await request.app[CONTEXT].events.load(scope_of(request), event_id)
    if stored is None:
        raise NotFound("event_not_found", detail.format(event_id))
    return stored
