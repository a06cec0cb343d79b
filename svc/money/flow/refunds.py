"""Refunds: created ``pending`` on a succeeded payment, then settled ``succeeded`` or ``failed``.

Creation locks the payment, so concurrent refunds of one payment never add up to more than
its captured amount (amount + tip) less its chargeback. Settlement runs in a transaction of
its own right after creation commits (and, should that process die first, in the
scheduler's sweep of refunds left pending). A refund that succeeds debits the balance by its
amount, gives back the same share of the payment's fee (``fee_refund``) and takes the same
share of a partner's commission back from the partner (``partner_commission_reversal``), all
with ``refund.succeeded``; one that fails books nothing and emits ``refund.failed`` with a
``failure_code``:

- ``insufficient_funds``: the balance (available + pending) does not cover the refund less
  the fee it gives back, so a refund never makes a balance negative;
- ``declined``: in the test environment, an amount ending in 05 Rappen fails.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from svc.db import Unit
from svc.db.times import now_ms
from svc.envelope import new_event
from svc.ids import new_id
from svc.money.errors import ExceedsRefundable, NotSucceeded, UnknownPayment
from svc.money.model.pricing import given_back
from svc.money.model.records import Refund
from svc.orgs.model import Scope
from svc.payments.model import Payment

if TYPE_CHECKING:
    from svc.context import Context

log = logging.getLogger(__name__)

SANDBOX_DECLINED_CENTS = 5


async def create(
    ctx: Context, unit: Unit, scope: Scope, payment_id: str, amount: int | None
) -> Refund:
    """A pending refund of ``amount`` (default: all that is left), settled after commit.

    Raises UnknownPayment, NotSucceeded or ExceedsRefundable.
    """
    payment = await ctx.payments.lock(unit, payment_id)
    if payment is None or (payment.org, payment.env) != (scope.org, scope.env):
        raise UnknownPayment(payment_id)
    if payment.status != "succeeded":
        raise NotSucceeded(payment.status)
    remaining = payment.amount + payment.tip - await ctx.refunds.taken(unit, payment.id)
    wanted = remaining if amount is None else amount
    if wanted <= 0 or wanted > remaining:
        raise ExceedsRefundable(remaining)
    now = now_ms()
    refund = Refund(
        new_id("re"),
        scope.org,
        scope.env,
        payment.id,
        wanted,
        payment.currency,
        "pending",
        now,
        now,
    )
    await ctx.refunds.insert(unit, refund)
    unit.after_commit(lambda: _settle_quietly(ctx, refund.id))
    return refund


async def _settle_quietly(ctx: Context, refund_id: str) -> None:
    try:
        await settle(ctx, refund_id)
    except Exception:  # left pending: the scheduler's sweep settles it
        log.warning("refund %s not settled yet", refund_id, exc_info=True)


def _failure(refund: Refund, covered: bool) -> str | None:
    if refund.env == "test" and refund.amount % 100 == SANDBOX_DECLINED_CENTS:
        return "declined"
    return None if covered else "insufficient_funds"


async def settle(ctx: Context, refund_id: str, unit: Unit | None = None) -> Refund | None:
    """Settle a pending refund (once: a settled one is returned as it is)."""
    async with ctx.unit(unit) as u:
        payment_id = await ctx.refunds.payment_of(u, refund_id)
        payment = None if payment_id is None else await ctx.payments.lock(u, payment_id)
        refund = await ctx.refunds.lock(u, refund_id)
        if payment is None or refund is None or refund.status != "pending":
            return refund
        now = now_ms()
        scope = Scope(refund.org, refund.env)
        await ctx.ledger.lock(u, scope, refund.currency, now)
        returned = await _returns(ctx, u, payment, refund)
        held = await ctx.ledger.balance(scope, refund.currency, now, u)
        failure = _failure(refund, held.total >= refund.amount - returned.fee)
        if failure is None:
            txn = await _book(ctx, u, scope, refund, returned, now)
            refund = refund.settled("succeeded", now, balance_transaction_id=txn)
        else:
            refund = refund.settled("failed", now, failure_code=failure)
        await ctx.refunds.settled(u, refund)
        event = new_event(f"refund.{refund.status}", refund.env, refund.event_data())
        await ctx.publisher.stage(u, event, refund.org)
    return refund


@dataclass(frozen=True, slots=True)
class _Returns:
    """What a refund gives back of the payment's fee, and takes back of a partner's share."""

    fee: int
    commission: int
    partner: str | None


async def _returns(ctx: Context, unit: Unit, payment: Payment, refund: Refund) -> _Returns:
    captured = payment.amount + payment.tip
    before = await ctx.refunds.refunded(unit, payment.id)
    after = before + refund.amount
    fee = given_back(payment.fee or 0, captured, before, after)
    share = await ctx.ledger.commission(unit, payment.id)
    if share is None:
        return _Returns(fee, 0, None)
    partner, commission = share
    return _Returns(fee, given_back(commission, captured, before, after), partner)


async def _book(
    ctx: Context, unit: Unit, scope: Scope, refund: Refund, returned: _Returns, now: int
) -> str:
    """Debit the refund, credit the fee given back, debit the partner's share; the id of the
    refund's own movement."""
    ledger, source = ctx.ledger, (refund.id, now)
    txn = await ledger.post(unit, scope, refund.currency, "refund", refund.amount, *source)
    if returned.fee:
        await ledger.post(unit, scope, refund.currency, "fee_refund", returned.fee, *source)
    if returned.partner is not None and returned.commission:
        partner = Scope(returned.partner, refund.env)
        await ledger.post(
            unit,
            partner,
            refund.currency,
            "partner_commission_reversal",
            returned.commission,
            *source,
            connected_org=refund.org,
        )
    return txn.id


async def settle_stragglers(ctx: Context, older_than_ms: int, limit: int = 200) -> int:
    """Settle refunds left pending since before ``older_than_ms``; returns how many were
    found (one another scheduler settled meanwhile is left as it is)."""
    pending = await ctx.refunds.pending(older_than_ms, limit)
    for refund_id in pending:
        await settle(ctx, refund_id)
    return len(pending)
