"""The device side of the terminal protocol: ``GET /terminal/v1/connect`` (WebSocket).

A terminal (real or simulated, see ``svc.terminal.protocol``) authenticates with its device
secret. While connected it is online; commands for it arrive on the signal hub from whichever
API process started or canceled the payment, and only the connection that holds the
terminal forwards them. Its reports move payments through ``svc.payments.flow``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from typing import Any

from aiohttp import WSMsgType, web

from api.hub import HUB, Listener, open_websocket
from api.openapi import SWITCHING, problem, problems
from api.problems import Unauthorized
from api.routing import Routes
from svc.context import Context
from svc.http import CONTEXT
from svc.payments.flow import add_step, move
from svc.pubsub.wakeups import terminal_topic
from svc.terminal import flow, protocol
from svc.terminal.model import Terminal

log = logging.getLogger(__name__)


routes = Routes("WebSockets")


async def _terminal(request: web.Request) -> Terminal:
    scheme, _, secret = request.headers.get("Authorization", "").partition(" ")
    terminal = None
    if scheme.lower() == "bearer" and secret.strip():
        terminal = await request.app[CONTEXT].terminals.authenticate(secret.strip())
    if terminal is None:
        raise Unauthorized(
            "invalid_terminal_secret",
            "Connect with Authorization: Bearer <terminal device secret>.",
        )
    return terminal


@routes.get(
    protocol.DEVICE_PATH,
    None,
    {
        "operationId": "connect_terminal",
        "summary": "Device side of the terminal protocol (for terminals, not tills)",
        "description": (
            "A terminal connects with its device secret; it is online while the socket is open. "
            "The service sends DeviceCommand messages, the terminal answers with DeviceReport "
            "messages."
        ),
        "security": [{"terminal": []}],
        "responses": {
            **SWITCHING,
            "401": problem(
                "The device secret is missing or unknown (invalid_terminal_secret).",
                headers={"WWW-Authenticate": {"required": True, "schema": {"type": "string"}}},
            ),
            **problems("426", "500"),
        },
    },
)
async def connect(request: web.Request) -> web.WebSocketResponse:
    """Hold a terminal's device connection: online while open, offline when it closes."""
    terminal = await _terminal(request)
    ws = await open_websocket(request)
    ctx: Context = request.app[CONTEXT]
    conn = secrets.token_hex(8)
    with request.app[HUB].listen(terminal_topic(terminal.id)) as listener:
        ttl = ctx.settings.terminal_presence_ttl
        await ctx.presence.keep_alive(terminal.id, conn, ttl)
        await flow.connect(ctx, terminal.id, conn)
        forwarder = asyncio.create_task(_forward(ctx, ws, listener, terminal.id, conn))
        alive = asyncio.create_task(_keep_alive(ctx, terminal.id, conn, ttl))
        try:
            await ws.send_str(protocol.welcome(terminal.id))
            await _resume(ctx, ws, terminal.id)
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    await _report(ctx, ws, terminal, message.data)
        finally:
            for task in (forwarder, alive):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await flow.disconnect(ctx, terminal.id, conn)
    return ws


async def _keep_alive(ctx: Context, terminal_id: str, conn: str, ttl: float) -> None:
    """Renew the presence lease; if this process dies, the scheduler marks the terminal offline.

    A lease lost with the cache (or taken for an orphan's) is renewed here, and the
    terminal is said online again, within a third of the lease's time to live.
    """
    while True:
        await asyncio.sleep(ttl / 3)
        try:
            await ctx.presence.keep_alive(terminal_id, conn, ttl)
            await flow.connect(ctx, terminal_id, conn)
        except Exception:  # a hiccup: the next renewal may still land within the lease
            log.warning("could not renew presence of terminal %s", terminal_id, exc_info=True)


async def _resume(ctx: Context, ws: web.WebSocketResponse, terminal_id: str) -> None:
    """After a (re)connect, hand the terminal the open payment it is working on, if any."""
    terminal = await ctx.terminals.get(terminal_id)
    if terminal is not None and terminal.current:
        await _send_start(ctx, ws, terminal.current)


async def _send_start(ctx: Context, ws: web.WebSocketResponse, payment_id: str) -> None:
    payment = await ctx.payments.get(payment_id)
    if payment is not None and not payment.final:
        await ws.send_str(
            protocol.start(payment.id, payment.amount, payment.currency, payment.tip_prompt)
        )


async def _forward(
    ctx: Context, ws: web.WebSocketResponse, listener: Listener, terminal_id: str, conn: str
) -> None:
    """Pass commands for this connection to the device."""
    while True:
        payload: dict[str, Any] = (await listener.get()).payload
        kind = payload.get("kind")
        if kind == "resync":
            await _resume(ctx, ws, terminal_id)
        elif payload.get("conn") != conn:
            continue  # meant for another (newer or older) connection of this terminal
        elif kind == "start":
            await _send_start(ctx, ws, str(payload["payment_id"]))
        elif kind == "cancel":
            await ws.send_str(protocol.cancel(str(payload["payment_id"])))


async def _report(ctx: Context, ws: web.WebSocketResponse, terminal: Terminal, raw: str) -> None:
    """Apply one message of the terminal; a refused message is answered with an error."""
    try:
        message = protocol.parse(raw)
    except protocol.ProtocolError as exc:
        await ws.send_str(protocol.error(exc.code, exc.detail))
        return
    if message.type == "progress":
        payment = await ctx.payments.get(message.payment_id)
        if payment is None or payment.terminal_id != terminal.id or payment.final:
            await ws.send_str(
                protocol.error("unknown_payment", "No open payment of this terminal has that id.")
            )
            return
        await add_step(ctx, payment.id, message.step)
        return
    changes: dict[str, Any] = {}
    if message.type == "authorized":
        changes["tip"] = message.tip
    elif message.type == "failed":
        changes["failure_code"] = message.reason or "declined"
    elif message.type == "canceled":
        changes["cancel_reason"] = message.reason or "canceled_on_terminal"
    status = protocol.RESULTS[message.type]
    moved = await move(ctx, message.payment_id, status, changes, terminal.id)
    if moved is None or moved.event is None:
        current = "unknown" if moved is None else moved.payment.status
        await ws.send_str(
            protocol.error(
                "transition_refused",
                f"Payment {message.payment_id} cannot become {status} "
                f"(it is {current} or not this terminal's).",
            )
        )
