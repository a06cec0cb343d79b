"""A deadline for every request: past ``SVC_REQUEST_TIMEOUT`` (8 s) its work is cancelled (an
open transaction rolls back) and it is answered 503 ``service_unavailable`` with
``Retry-After``, so a client hears back before it gives up on its own, and work whose client
has gone does not hold the pool's connections while new requests wait for them.

A long poll gets its ``wait`` on top; WebSocket upgrades have no deadline (they live as long
as their socket). A POST cut off after its commit is safe to retry with its
``Idempotency-Key``: the key commits with the change, so the retry gets the stored answer.
"""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from api.problems import Handler, Problem
from svc.http import CONTEXT

log = logging.getLogger(__name__)

RETRY_AFTER = "2"


def _lasting(request: web.Request) -> bool:
    """A WebSocket upgrade: the handler runs as long as the socket is open."""
    return request.headers.get("Upgrade", "").lower() == "websocket"


def _waits(request: web.Request) -> float:
    """The seconds a long poll may wait (``?wait=N``); 0 when none or not a number (the
    route itself refuses a bad one)."""
    raw = request.query.get("wait", "")
    return float(raw) if raw.isdigit() else 0.0


@web.middleware
async def deadline_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if _lasting(request):
        return await handler(request)
    limit = request.app[CONTEXT].settings.request_timeout + _waits(request)
    deadline = asyncio.timeout(limit)
    try:
        async with deadline:
            return await handler(request)
    except TimeoutError:
        if not deadline.expired():
            raise
        log.warning("%s %s: no answer within %.1f s", request.method, request.path, limit)
        raise Problem(
            503,
            "service_unavailable",
            "The service could not answer in time; retry shortly.",
            headers={"Retry-After": RETRY_AFTER},
        ) from None
