"""What a payment that succeeds books: its amount, its fee and a partner's commission.

Called by the payment flow in the transaction that moves the payment to ``succeeded``, so the
payment's new state, its ``fee``, its ledger movements and its event commit together.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from svc.db import Unit
from svc.money.model.pricing import configured, partner_share
from svc.orgs.model import Scope
from svc.payments.model import Payment

if TYPE_CHECKING:
    from svc.context import Context


async def book(ctx: Context, unit: Unit, payment: Payment, now_ms: int) -> Payment:
    """Book the captured amount (amount + tip), the fee and the partner's commission; the
    payment with its ``fee``. All three become available after ``SVC_SETTLEMENT_DELAY``."""
    settings, ledger = ctx.settings, ctx.ledger
    scope = Scope(payment.org, payment.env)
    captured = payment.amount + payment.tip
    prices = await ctx.tariffs.pricing_of(configured(settings.pricing), payment.org, unit)
    fee = prices.rate(payment.channel).fee(captured)
    available_ms = now_ms + round(settings.settlement_delay * 1000)
    source = (payment.id, now_ms, available_ms)
    await ledger.post(unit, scope, payment.currency, "payment", captured, *source)
    if fee.total:
        await ledger.post(unit, scope, payment.currency, "fee", fee.total, *source)
    share = partner_share(fee)
    partner = await ctx.orgs.partner_of(payment.org, unit) if share else None
    if partner is not None:
        await ledger.post(
            unit,
            Scope(partner, payment.env),
            payment.currency,
            "partner_commission",
            share,
            *source,
            connected_org=payment.org,
        )
    return replace(payment, fee=fee.total)
