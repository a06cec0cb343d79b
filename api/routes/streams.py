"""The payment WebSocket ``GET /v1/payments/{payment_id}/stream``: progress and status for a till.

Messages (JSON text), in order:

- ``{"type": "payment", "payment": {…}}`` — first the payment as it is, then again on every
  status change;
- ``{"type": "progress", "payment_id", "seq", "step"}`` — terminal steps (``waiting_for_card``,
  ``tip_selection``, ``pin_entry``, ``processing``), numbered from 1; steps that happened
  before the socket opened are sent first.

After the payment message with a final status the server closes the socket (code 1000).

One API key holds at most ``SVC_MAX_STREAMS_PER_KEY`` streams open on one API process; one
more is refused 429 ``too_many_streams`` before the upgrade, so a client cannot tie up the
process's sockets and wake-up listeners without end.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import orjson
from aiohttp import WSCloseCode, web

from api.hub import HUB, Listener, open_websocket
from api.lookups import scoped_payment
from api.middleware.auth import key_of
from api.openapi import (
    SWITCHING,
    path_id,
)
from api.problems import Problem
from api.routing import Routes
from svc.context import Context
from svc.http import CONTEXT
from svc.payments import Payment
from svc.pubsub.wakeups import Signal, payment_topic

routes = Routes("WebSockets", path_id("payment_id", "pay", "payment"))


class OpenStreams:
    """How many streams each API key holds open on this process."""

    def __init__(self, most: int) -> None:
        self._most = most
        self._open: dict[str, int] = {}

    @contextlib.contextmanager
    def hold(self, key_id: str) -> Iterator[None]:
        """One more stream of ``key_id`` while the block runs; 429 when it has its most."""
        held = self._open.get(key_id, 0)
        if 0 < self._most <= held:
            detail = f"This API key holds {self._most} payment streams open; close one first."
            raise Problem(429, "too_many_streams", detail, headers={"Retry-After": "1"})
        self._open[key_id] = held + 1
        try:
            yield
        finally:
            left = self._open[key_id] - 1
            if left:
                self._open[key_id] = left
            else:
                del self._open[key_id]


OPEN_STREAMS = web.AppKey("open_streams", OpenStreams)


def install(app: web.Application) -> None:
    app[OPEN_STREAMS] = OpenStreams(app[CONTEXT].settings.max_streams_per_key)


class _Stream:
    """What one socket has sent so far, so nothing is sent twice."""

    def __init__(self, ctx: Context, ws: web.WebSocketResponse, payment: Payment) -> None:
        self.ctx = ctx
        self.ws = ws
        self.payment = payment
        self.sent_status = ""
        self.sent_steps = 0

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send_str(orjson.dumps(message).decode())

    async def refresh(self) -> None:
        """Send steps and status not sent yet."""
        payment, steps = await self.ctx.payments.with_steps(self.payment.id)
        self.payment = payment or self.payment
        for seq, step in enumerate(steps[self.sent_steps :], self.sent_steps + 1):
            await self.send(
                {"type": "progress", "payment_id": self.payment.id, "seq": seq, "step": step}
            )
        self.sent_steps = max(self.sent_steps, len(steps))
        if self.payment.status != self.sent_status:
            public = self.payment.public(self.ctx.settings.checkout_base_url)
            await self.send({"type": "payment", "payment": public})
            self.sent_status = self.payment.status

    async def apply(self, signal: Signal) -> None:
        payload = signal.payload
        if payload.get("kind") == "progress":
            seq = int(payload["seq"])
            if seq == self.sent_steps + 1:
                await self.send(
                    {
                        "type": "progress",
                        "payment_id": self.payment.id,
                        "seq": seq,
                        "step": payload["step"],
                    }
                )
                self.sent_steps = seq
            elif seq > self.sent_steps:
                await self.refresh()  # a step was missed: read the list
            return
        await self.refresh()


@routes.get(
    "/v1/payments/{payment_id}/stream",
    "payments:read",
    {
        "operationId": "stream_payment",
        "summary": "WebSocket of one payment: progress steps and status changes",
        "description": (
            "Text messages are StreamMessage objects. The server closes the socket (code 1000) "
            "after the message with a final status. One API key holds at most "
            "SVC_MAX_STREAMS_PER_KEY streams open on one API process; one more is 429 "
            "too_many_streams."
        ),
        "responses": SWITCHING,
    },
    "404",
    "426",
)
async def stream(request: web.Request) -> web.WebSocketResponse:
    """Stream one payment's progress and status changes; closes after its final state."""
    payment = await scoped_payment(request)
    with request.app[OPEN_STREAMS].hold(key_of(request).id):
        return await _serve(request, payment)


async def _serve(request: web.Request, payment: Payment) -> web.WebSocketResponse:
    ws = await open_websocket(request)
    ctx: Context = request.app[CONTEXT]
    ctx.metrics.long_polls.inc()
    closed = asyncio.create_task(_until_closed(ws))
    try:
        with request.app[HUB].listen(payment_topic(payment.id)) as listener:
            state = _Stream(ctx, ws, payment)
            await state.refresh()
            while not state.payment.final and await _next(listener, closed, state):
                pass
        if state.payment.final and not ws.closed:
            await ws.close(code=WSCloseCode.OK, message=b"final")
    finally:
        ctx.metrics.long_polls.dec()
        closed.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await closed
    return ws


async def _next(listener: Listener, closed: asyncio.Task[None], state: _Stream) -> bool:
    """Apply the next signal; False when the client went away or the server shuts down."""
    waiting = asyncio.create_task(listener.get())
    done, _ = await asyncio.wait({waiting, closed}, return_when=asyncio.FIRST_COMPLETED)
    if waiting not in done:
        waiting.cancel()
        return False
    signal = waiting.result()
    if signal.payload.get("kind") == "shutdown":
        return False
    await state.apply(signal)
    return True


async def _until_closed(ws: web.WebSocketResponse) -> None:
    """Read (and ignore) client messages until the socket closes."""
    async for _ in ws:
        pass
