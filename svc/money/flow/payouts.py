"""Payouts: available balance sent to an organisation's bank account, ``paid`` at once.

The scheduler pays out every balance once per period of ``SVC_PAYOUT_SCHEDULE``
(``pay_out_due``); ``POST /v1/payouts`` pays out now in the test environment (``pay_out``).
Both lock the balance's row, the scheduler with ``SKIP LOCKED``: of two schedulers, one
pays a balance out and records the run, and the other skips it or finds it done, so a
balance is never paid out twice. A payout never exceeds what is available, so it never makes
the available balance negative. Each emits ``payout.paid``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from svc.db import Unit
from svc.db.times import now_ms, to_dt
from svc.envelope import new_event
from svc.ids import new_id
from svc.money.errors import InsufficientFunds
from svc.money.model.records import PAYOUT_STATUS, Payout
from svc.money.model.schedule import DAY_MS, PayoutSchedule
from svc.orgs.model import Scope

if TYPE_CHECKING:
    from svc.context import Context

ARRIVAL_MS = DAY_MS
"""A payout arrives at the bank the next day."""


async def _pay(
    ctx: Context, unit: Unit, scope: Scope, currency: str, amount: int, automatic: bool, now: int
) -> Payout:
    payout_id = new_id("po")
    txn = await ctx.ledger.post(unit, scope, currency, "payout", amount, payout_id, now)
    payout = Payout(
        payout_id,
        scope.org,
        scope.env,
        amount,
        currency,
        PAYOUT_STATUS,
        automatic,
        to_dt(now + ARRIVAL_MS).date().isoformat(),
        txn.id,
        now,
    )
    await ctx.payouts.insert(unit, payout)
    event = new_event("payout.paid", scope.env, payout.event_data())
    await ctx.publisher.stage(unit, event, scope.org)
    return payout


async def pay_out(
    ctx: Context, unit: Unit, scope: Scope, currency: str, amount: int | None
) -> Payout:
    """Pay out ``amount`` (default: all that is available) now; raises InsufficientFunds."""
    now = now_ms()
    await ctx.ledger.lock(unit, scope, currency, now)
    available = (await ctx.ledger.balance(scope, currency, now, unit)).available
    wanted = available if amount is None else amount
    if available <= 0 or wanted > available:
        raise InsufficientFunds(max(available, 0))
    return await _pay(ctx, unit, scope, currency, wanted, False, now)


async def pay_out_due(ctx: Context, schedule: PayoutSchedule, now: int | None = None) -> int:
    """Pay out every balance not yet looked at in the current period; returns the number of
    payouts made. Each balance is locked with ``SKIP LOCKED`` and its run recorded in the
    transaction of its payout, so concurrent schedulers never pay one out twice."""
    at = now_ms() if now is None else now
    period_start = schedule.period_start(at)
    paid = 0
    while True:
        async with ctx.unit() as unit:
            due = await ctx.payouts.next_due(unit, period_start)
            if due is None:
                return paid
            scope, currency = due
            available = (await ctx.ledger.balance(scope, currency, at, unit)).available
            if available > 0:
                await _pay(ctx, unit, scope, currency, available, True, at)
                paid += 1
            await ctx.payouts.paid_through(unit, scope, currency, at)
