"""Chargebacks: a cardholder's bank takes a succeeded payment back.

The disputed amount is what is left of the payment (captured less refunds); it and the
chargeback fee (the ``chargeback`` rate of the organisation's pricing) are debited at once,
even when that makes the balance negative: a chargeback is imposed, not asked for. Later
payments refill the balance before anything is paid out. In the sandbox
``POST /v1/sandbox/payments/{id}/chargeback`` raises one; each payment has at most one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from svc.db import Unit
from svc.db.times import now_ms
from svc.envelope import new_event
from svc.ids import new_id
from svc.money.errors import AlreadyChargedBack, NothingToDispute, NotSucceeded, UnknownPayment
from svc.money.model.pricing import configured
from svc.money.model.records import CHARGEBACK_STATUS, Chargeback
from svc.orgs.model import Scope

if TYPE_CHECKING:
    from svc.context import Context


async def receive(
    ctx: Context, unit: Unit, scope: Scope, payment_id: str, reason: str
) -> Chargeback:
    """Debit a chargeback of a payment and its fee; emits ``chargeback.created``.

    Raises UnknownPayment, NotSucceeded, AlreadyChargedBack or NothingToDispute.
    """
    payment = await ctx.payments.lock(unit, payment_id)
    if payment is None or (payment.org, payment.env) != (scope.org, scope.env):
        raise UnknownPayment(payment_id)
    if payment.status != "succeeded":
        raise NotSucceeded(payment.status)
    if await ctx.chargebacks.exists(unit, payment.id):
        raise AlreadyChargedBack(payment.id)
    disputed = payment.amount + payment.tip - await ctx.refunds.taken(unit, payment.id)
    if disputed <= 0:
        raise NothingToDispute(payment.id)
    prices = await ctx.tariffs.pricing_of(configured(ctx.settings.pricing), payment.org, unit)
    fee = prices.rate("chargeback").charge(disputed)
    now = now_ms()
    chargeback = Chargeback(
        new_id("cb"),
        scope.org,
        scope.env,
        payment.id,
        disputed,
        fee,
        payment.currency,
        reason,
        CHARGEBACK_STATUS,
        now,
    )
    await ctx.chargebacks.insert(unit, chargeback)
    await ctx.ledger.post(unit, scope, payment.currency, "chargeback", disputed, chargeback.id, now)
    if fee:
        await ctx.ledger.post(
            unit, scope, payment.currency, "chargeback_fee", fee, chargeback.id, now
        )
    event = new_event("chargeback.created", scope.env, chargeback.event_data())
    await ctx.publisher.stage(unit, event, scope.org)
    return chargeback
