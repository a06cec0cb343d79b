"""A deadline for every request: past ``SVC_REQUEST_TIMEOUT`` (8 s) its work is cancelled (an
open transaction rolls back) and it is answered 503 ``service_unavailable`` with
``Retry-After``, so a client hears back before it gives up on its own, and work whose client
has gone does not hold the pool's connections while new requests wait for them.

A long poll gets its ``wait`` on top (``extend``, called by the route once it has read it),
and a route lifts the deadline once it has upgraded its request to a WebSocket (``lift``):
the socket lives as long as it is open. Both are the matched route's doing; no header or
query parameter of the request changes the deadline by itself. A POST cut off after its
commit is safe to retry with its ``Idempotency-Key``: the key commits with the change, so
the retry gets the stored answer.
"""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from api.problems import Handler, Problem
from svc.http import CONTEXT

log = logging.getLogger(__name__)

RETRY_AFTER = "2"


DEADLINE = web.RequestKey("deadline", asyncio.Timeout)


def extend(request: web.Request, seconds: float) -> None:
    """Give the request ``seconds`` more (a long poll's ``wait``)."""
    deadline = request.get(DEADLINE)
    when = deadline.when() if deadline is not None else None
    if deadline is not None and when is not None:
        deadline.reschedule(when + seconds)


def lift(request: web.Request) -> None:
    """No deadline for the rest of the request: it became a WebSocket."""
    deadline = request.get(DEADLINE)
    if deadline is not None:
        deadline.reschedule(None)


@web.middleware
async def deadline_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    loop = asyncio.get_running_loop()
    started = loop.time()
    deadline = asyncio.timeout(request.app[CONTEXT].settings.request_timeout)
    request[DEADLINE] = deadline
    try:
        async with deadline:
            return await handler(request)
    except TimeoutError:
        if not deadline.expired():
            raise
        took = loop.time() - started
        log.warning("%s %r: no answer within %.1f s", request.method, request.path, took)
        raise Problem(
            503,
            "service_unavailable",
            "The service could not answer in time; retry shortly.",
            headers={"Retry-After": RETRY_AFTER},
        ) from None
