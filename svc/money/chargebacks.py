"""Chargebacks: a cardholder's bank takes a succeeded payment back.

The disputed amount is what is left of the payment (captured less refunds); it and the
chargeback fee (the ``chargeback`` rate of the organisation's pricing) are debited at once,
even when that makes the balance negative: a chargeback is imposed, not asked for. Later
payments refill the balance before anything is paid out. In the sandbox
``POST /v1/sandbox/payments/{id}/chargeback`` raises one; each payment has at most one.
"""

from __future__ import annotations

from typing import Any

from svc.context import Context
from svc.db import Queries, Unit
from svc.db.paging import page
from svc.db.times import to_dt, to_ms
from svc.envelope import new_event
from svc.ids import new_id
from svc.money import ledger, tariffs
from svc.money.errors import AlreadyChargedBack, NothingToDispute, NotSucceeded, UnknownPayment
from svc.money.model import CHARGEBACK_STATUS, Chargeback
from svc.money.pricing import configured
from svc.money.refunds import taken
from svc.orgs import Scope
from svc.payments.flow import now_ms

_COLUMNS = "id, org_id, env, payment_id, amount, fee, currency, reason, status, created_at"


def _chargeback(row: Any) -> Chargeback:
    return Chargeback(
        id=row["id"],
        org=row["org_id"],
        env=row["env"],
        payment_id=row["payment_id"],
        amount=row["amount"],
        fee=row["fee"],
        currency=row["currency"],
        reason=row["reason"],
        status=row["status"],
        created_ms=to_ms(row["created_at"]),
    )


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
    if await unit.fetchval("SELECT true FROM chargebacks WHERE payment_id = $1", payment.id):
        raise AlreadyChargedBack(payment.id)
    disputed = payment.amount + payment.tip - await taken(unit, payment.id)
    if disputed <= 0:
        raise NothingToDispute(payment.id)
    prices = await tariffs.pricing_of(unit, configured(ctx.settings.pricing), payment.org)
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
    await unit.execute(
        f"INSERT INTO chargebacks ({_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        chargeback.id,
        chargeback.org,
        chargeback.env,
        chargeback.payment_id,
        chargeback.amount,
        chargeback.fee,
        chargeback.currency,
        chargeback.reason,
        chargeback.status,
        to_dt(now),
    )
    await ledger.post(unit, scope, payment.currency, "chargeback", disputed, chargeback.id, now)
    if fee:
        await ledger.post(unit, scope, payment.currency, "chargeback_fee", fee, chargeback.id, now)
    event = new_event("chargeback.created", scope.env, chargeback.event_data())
    await ctx.publisher.stage(unit, event, scope.org)
    return chargeback


async def get(q: Queries, scope: Scope, chargeback_id: str) -> Chargeback | None:
    row = await q.fetchrow(
        f"SELECT {_COLUMNS} FROM chargebacks WHERE id = $1 AND org_id = $2 AND env = $3",
        chargeback_id,
        scope.org,
        scope.env,
    )
    return None if row is None else _chargeback(row)


async def listing(
    q: Queries, scope: Scope, limit: int, cursor: str | None
) -> tuple[list[Chargeback], str | None]:
    """Chargebacks of ``scope``, newest first."""
    select = f"SELECT {_COLUMNS} FROM chargebacks WHERE org_id = $1 AND env = $2"
    return await page(q, select, [scope.org, scope.env], limit, cursor, _chargeback)
