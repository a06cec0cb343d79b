"""What a payment that succeeds books: its amount, its fee and a partner's commission.

Called by the payment flow in the transaction that moves the payment to ``succeeded``, so the
payment's new state, its ``fee``, its ledger movements and its event commit together.
"""

from __future__ import annotations

from dataclasses import replace

from svc.db import Unit
from svc.money import ledger, partners, tariffs
from svc.money.pricing import configured, partner_share
from svc.orgs import Scope
from svc.payments.model import Payment
from svc.settings import Settings


async def book(settings: Settings, unit: Unit, payment: Payment, now_ms: int) -> Payment:
    """Book the captured amount (amount + tip), the fee and the partner's commission; the
    payment with its ``fee``. All three become available after ``SVC_SETTLEMENT_DELAY``."""
    scope = Scope(payment.org, payment.env)
    captured = payment.amount + payment.tip
    prices = await tariffs.pricing_of(unit, configured(settings.pricing), payment.org)
    fee = prices.rate(payment.channel).fee(captured)
    available_ms = now_ms + round(settings.settlement_delay * 1000)
    source = (payment.id, now_ms, available_ms)
    await ledger.post(unit, scope, payment.currency, "payment", captured, *source)
    if fee.total:
        await ledger.post(unit, scope, payment.currency, "fee", fee.total, *source)
    share = partner_share(fee)
    partner = await partners.partner_of(unit, payment.org) if share else None
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
