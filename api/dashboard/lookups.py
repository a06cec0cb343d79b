"""Objects named in a dashboard path, found only within the session's scope: any other id,
another organisation's or environment's included, is a 404 page exactly like a missing one."""

from __future__ import annotations

from aiohttp import web

from api import lookups
from api.middleware.auth import scope_of
from api.problems import NotFound
from svc.events.model import StoredEvent
from svc.http import CONTEXT
from svc.keys.model import ApiKey
from svc.orgs import Scope
from svc.payments import Payment
from svc.webhooks.model import Endpoint

ENDPOINT_NOT_FOUND = "There is no such webhook endpoint here."
KEY_NOT_FOUND = "There is no such API key here."


async def scoped_endpoint(request: web.Request) -> Endpoint:
    return await lookups.scoped_endpoint(request, ENDPOINT_NOT_FOUND)


def endpoint_gone() -> NotFound:
    """The 404 page of an endpoint deleted between its lookup and a change to it."""
    return NotFound("endpoint_not_found", ENDPOINT_NOT_FOUND)


async def endpoint_urls(request: web.Request, scope: Scope) -> dict[str, str]:
    """The URL of each of the scope's endpoints by id, so pages name endpoints as their owner
    does (an endpoint deleted since is shown by its id)."""
    found = await request.app[CONTEXT].endpoints.in_scope(scope.org, scope.env)
    return {endpoint.id: endpoint.shown_url for endpoint in found}


async def scoped_event(request: web.Request) -> StoredEvent:
    return await lookups.scoped_event(request, "There is no such event here (or it expired).")


async def scoped_payment(request: web.Request) -> Payment:
    return await lookups.scoped_payment(request, "There is no such payment here.")


async def scoped_key(request: web.Request) -> ApiKey:
    keys, scope = request.app[CONTEXT].api_keys, scope_of(request)
    return await lookups.named(
        request,
        "key_id",
        "key",
        lambda key_id: keys.get(key_id, scope),
        "api_key_not_found",
        KEY_NOT_FOUND,
    )


def key_gone() -> NotFound:
    """The 404 page of a key that left the scope between its lookup and a change to it."""
    return NotFound("api_key_not_found", KEY_NOT_FOUND)
