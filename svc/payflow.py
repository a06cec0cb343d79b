"""Payment life cycle: create and move payments, then publish the committed event.

Every function commits the state change and its event (with outbox entry) in one Redis
transaction first, then publishes with a broker confirm. A process that dies in between
leaves the outbox entry, which the scheduler's sweep re-publishes.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

from svc.context import Context
from svc.events import Event
from svc.ids import new_id
from svc.payments import Payment
from svc.publish import publish_staged
from svc.store.apikeys import Scope
from svc.store.payments import Moved, now_ms

log = logging.getLogger(__name__)


async def create_online(
    ctx: Context, scope: Scope, amount: int, currency: str, channel: str, success_url: str
) -> Payment:
    """A pending online or phone payment with a checkout page; expires after
    ``SVC_PAYMENT_EXPIRY``."""
    now = now_ms()
    payment = Payment(
        id=new_id("pay"),
        org=scope.org,
        env=scope.env,
        status="pending",
        amount=amount,
        currency=currency,
        channel=channel,
        created_ms=now,
        updated_ms=now,
        success_url=success_url,
        checkout_token=secrets.token_urlsafe(18),
        expires_ms=now + round(ctx.settings.payment_expiry * 1000),
    )
    event = await ctx.payments.create(payment)
    await publish_staged(ctx, event, scope.org)
    return payment


async def create_on_terminal(
    ctx: Context, scope: Scope, terminal_id: str, amount: int, currency: str, tip_prompt: bool
) -> Payment:
    """A pending payment started on a terminal; raises TerminalUnavailable.

    The terminal must report a final state within ``SVC_TERMINAL_TIMEOUT``, else the payment
    fails with ``terminal_timeout``.
    """
    now = now_ms()
    payment = Payment(
        id=new_id("pay"),
        org=scope.org,
        env=scope.env,
        status="pending",
        amount=amount,
        currency=currency,
        channel="terminal",
        created_ms=now,
        updated_ms=now,
        terminal_id=terminal_id,
        tip_prompt=tip_prompt,
        expires_ms=now + round(ctx.settings.terminal_timeout * 1000),
    )
    event = await ctx.payments.create_on_terminal(payment)
    await publish_staged(ctx, event, scope.org)
    return payment


async def move(
    ctx: Context,
    payment_id: str,
    status: str,
    changes: dict[str, Any] | None = None,
    from_terminal: str | None = None,
) -> Moved | None:
    """Move a payment to ``status`` when its state allows; publishes the event it emits."""
    moved = await ctx.payments.transition(payment_id, status, changes, from_terminal)
    if moved is not None and moved.event is not None:
        await publish_staged(ctx, moved.event, moved.payment.org)
        log.debug("payment %s is %s", payment_id, status)
    return moved


async def complete(ctx: Context, payment_id: str) -> Payment | None:
    """Authorize then capture (the sandbox checkout's "pay"): two states, two events."""
    authorized = await move(ctx, payment_id, "authorized")
    if authorized is None:
        return None
    captured = await move(ctx, payment_id, "succeeded")
    return None if captured is None else captured.payment


async def publish_presence(ctx: Context, org: str, event: Event | None) -> None:
    """Publish a staged ``terminal.online`` / ``terminal.offline`` event, if there is one."""
    if event is not None:
        await publish_staged(ctx, event, org)
