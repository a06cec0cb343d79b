"""Payment use cases: create and move payments, each in one unit of work.

The payment row, its ``payment.*`` event and the event's outbox row commit together (and,
when the caller holds an idempotency key, the stored response: see ``svc.idempotency``).
After the commit the event is published and listeners are woken; a process that dies in
between leaves the outbox row, which the scheduler's sweep publishes.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from svc.db import Unit
from svc.db.times import now_ms
from svc.envelope import Event, new_event
from svc.errors import TerminalUnavailable
from svc.ids import new_id
from svc.money.flow import charges
from svc.orgs import Scope
from svc.payments.model import Payment, allowed
from svc.pubsub import wakeups as signals

if TYPE_CHECKING:
    from svc.context import Context

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Moved:
    """The payment after a transition attempt; ``event`` is None when nothing changed."""

    payment: Payment
    event: Event | None


async def _entered(ctx: Context, unit: Unit, payment: Payment, event_type: str) -> Event:
    """Stage the event of a state just entered and the wake-up of the payment's listeners.

    A payment just created has no listener to wake: a long poll or a stream reads the payment
    after it starts listening, so whatever listens to a new payment found it committed in the
    state it was created in. Creation therefore costs no wake-up (a Redis publish that every
    API process would receive and parse for nothing)."""
    event = new_event(event_type, payment.env, payment.event_data())
    # The wake-up goes first: effects run in order, and a waiter reads the committed payment,
    # so it need not wait for the event's broker confirm (the outbox row keeps the event).
    if event_type != "payment.created":
        wake_after(ctx, unit, payment)
    await ctx.publisher.stage(unit, event, payment.org)
    return event


def wake_after(ctx: Context, unit: Unit, payment: Payment) -> None:
    """Once ``unit`` commits, wake the long polls and streams of ``payment`` (its new status)."""
    ctx.signal_after(unit, signals.status_signal(payment.id, payment.status))


def _pending(
    scope: Scope, amount: int, currency: str, channel: str, lifetime_s: float, **extra: Any
) -> Payment:
    """A new pending payment of ``scope`` that ends unless it is final within ``lifetime_s``."""
    now = now_ms()
    return Payment(
        id=new_id("pay"),
        org=scope.org,
        env=scope.env,
        status="pending",
        amount=amount,
        currency=currency,
        channel=channel,
        created_ms=now,
        updated_ms=now,
        expires_ms=now + round(lifetime_s * 1000),
        **extra,
    )


async def create_online(
    ctx: Context,
    unit: Unit,
    scope: Scope,
    amount: int,
    currency: str,
    channel: str,
    success_url: str,
) -> Payment:
    """A pending online or phone payment with a checkout page; expires after
    ``SVC_PAYMENT_EXPIRY``."""
    payment = _pending(
        scope,
        amount,
        currency,
        channel,
        ctx.settings.payment_expiry,
        success_url=success_url,
        checkout_token=secrets.token_urlsafe(18),
    )
    await ctx.payments.insert(unit, payment)
    await _entered(ctx, unit, payment, "payment.created")
    return payment


async def create_on_terminal(
    ctx: Context,
    unit: Unit,
    scope: Scope,
    terminal_id: str,
    amount: int,
    currency: str,
    tip_prompt: bool,
) -> Payment:
    """A pending payment started on a terminal; raises TerminalUnavailable.

    The terminal must report a final state within ``SVC_TERMINAL_TIMEOUT``, else the payment
    fails with ``terminal_timeout``.
    """
    terminal = await ctx.terminals.lock(unit, terminal_id)
    if terminal is None or (terminal.org, terminal.env) != (scope.org, scope.env):
        raise TerminalUnavailable("not_found")
    if not terminal.online:
        raise TerminalUnavailable("offline")
    if terminal.current:
        raise TerminalUnavailable("busy")
    payment = _pending(
        scope,
        amount,
        currency,
        "terminal",
        ctx.settings.terminal_timeout,
        terminal_id=terminal_id,
        tip_prompt=tip_prompt,
    )
    await ctx.payments.insert(unit, payment)
    await ctx.terminals.set_current(unit, terminal_id, payment.id)
    await _entered(ctx, unit, payment, "payment.created")
    command = {"kind": "start", "payment_id": payment.id, "conn": terminal.conn}
    ctx.signal_after(unit, signals.Signal(signals.terminal_topic(terminal_id), command))
    return payment


async def move(
    ctx: Context,
    payment_id: str,
    status: str,
    changes: dict[str, Any] | None = None,
    from_terminal: str | None = None,
    unit: Unit | None = None,
) -> Moved | None:
    """Move a payment to ``status`` when its state allows; None when it does not exist.

    ``from_terminal`` names the terminal reporting the change: it must be the payment's own.
    Otherwise a terminal payment that ends is told to stop on its terminal.
    """
    async with ctx.unit(unit) as u:
        payment = await ctx.payments.lock(u, payment_id)
        if payment is None:
            return None
        if not allowed(payment.status, status) or (
            from_terminal is not None and payment.terminal_id != from_terminal
        ):
            return Moved(payment, None)
        now = now_ms()
        moved = payment.moved(status, now, **(changes or {}))
        if status == "succeeded":  # its fee and ledger movements commit with the new state
            moved = await charges.book(ctx, u, moved, now)
        await ctx.payments.update(u, moved)
        event = await _entered(ctx, u, moved, f"payment.{status}")
        if moved.final and moved.terminal_id is not None:
            await _release_terminal(ctx, u, moved, from_terminal is None)
    log.debug("payment %s is %s", payment_id, status)
    return Moved(moved, event)


async def _release_terminal(ctx: Context, unit: Unit, payment: Payment, tell: bool) -> None:
    """Free the terminal of a payment that ended; ``tell`` it to stop when it did not say so."""
    assert payment.terminal_id is not None
    terminal = await ctx.terminals.lock(unit, payment.terminal_id)
    if terminal is None or terminal.current != payment.id:
        return
    await ctx.terminals.set_current(unit, terminal.id, None)
    if tell:
        command = {"kind": "cancel", "payment_id": payment.id, "conn": terminal.conn}
        ctx.signal_after(unit, signals.Signal(signals.terminal_topic(terminal.id), command))


async def complete(ctx: Context, payment_id: str) -> Payment | None:
    """Authorize then capture (the sandbox checkout's "pay"): two states, two events, one
    transaction."""
    async with ctx.unit() as unit:
        authorized = await move(ctx, payment_id, "authorized", unit=unit)
        if authorized is None:
            return None
        captured = await move(ctx, payment_id, "succeeded", unit=unit)
    return None if captured is None else captured.payment


async def add_step(ctx: Context, payment_id: str, step: str) -> int:
    """Record a progress step of a terminal payment and wake its listeners; returns its number."""
    seq = await ctx.payments.add_step(payment_id, step)
    try:
        await ctx.signal(signals.progress_signal(payment_id, seq, step))
    except Exception:  # the step is stored; a stream that missed the signal reads it later
        log.warning("progress signal of %s not sent", payment_id, exc_info=True)
    return seq
