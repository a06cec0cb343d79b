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
from typing import Any

from svc.context import Context
from svc.db import Queries, Unit
from svc.db.paging import narrowed, page
from svc.db.times import opt_dt, to_dt, to_ms
from svc.envelope import new_event
from svc.ids import new_id
from svc.money import ledger
from svc.money.errors import ExceedsRefundable, NotSucceeded, UnknownPayment
from svc.money.model import Refund
from svc.money.pricing import given_back
from svc.orgs import Scope
from svc.payments import Payment
from svc.payments.flow import now_ms

log = logging.getLogger(__name__)

SANDBOX_DECLINED_CENTS = 5
_COLUMNS = (
    "id, org_id, env, payment_id, amount, currency, status, failure_code, "
    "balance_transaction_id, created_at, updated_at"
)


def _refund(row: Any) -> Refund:
    return Refund(
        id=row["id"],
        org=row["org_id"],
        env=row["env"],
        payment_id=row["payment_id"],
        amount=row["amount"],
        currency=row["currency"],
        status=row["status"],
        created_ms=to_ms(row["created_at"]),
        updated_ms=to_ms(row["updated_at"]),
        failure_code=row["failure_code"],
        balance_transaction_id=row["balance_transaction_id"],
    )


async def taken(q: Queries, payment_id: str) -> int:
    """What of a payment is refunded (or being refunded) or charged back."""
    value = await q.fetchval(
        """SELECT (SELECT coalesce(sum(amount), 0) FROM refunds
                   WHERE payment_id = $1 AND status <> 'failed')
                + (SELECT coalesce(sum(amount), 0) FROM chargebacks WHERE payment_id = $1)""",
        payment_id,
    )
    return int(value)


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
    remaining = payment.amount + payment.tip - await taken(unit, payment.id)
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
    await unit.execute(
        f"INSERT INTO refunds ({_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        refund.id,
        refund.org,
        refund.env,
        refund.payment_id,
        refund.amount,
        refund.currency,
        refund.status,
        None,
        None,
        to_dt(now),
        to_dt(now),
    )
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
        payment_id = await u.fetchval("SELECT payment_id FROM refunds WHERE id = $1", refund_id)
        payment = None if payment_id is None else await ctx.payments.lock(u, payment_id)
        row = await u.fetchrow(
            f"SELECT {_COLUMNS} FROM refunds WHERE id = $1 FOR UPDATE", refund_id
        )
        if payment is None or row is None or row["status"] != "pending":
            return None if row is None else _refund(row)
        refund, now = _refund(row), now_ms()
        scope = Scope(refund.org, refund.env)
        await ledger.lock(u, scope, refund.currency, now)
        returned = await _returns(u, payment, refund)
        held = await ledger.balance(u, scope, refund.currency, now)
        failure = _failure(refund, held.total >= refund.amount - returned.fee)
        if failure is None:
            txn = await _book(u, scope, refund, returned, now)
            refund = refund.settled("succeeded", now, balance_transaction_id=txn)
        else:
            refund = refund.settled("failed", now, failure_code=failure)
        await u.execute(
            """UPDATE refunds SET status = $2, failure_code = $3, balance_transaction_id = $4,
                   updated_at = $5 WHERE id = $1""",
            refund.id,
            refund.status,
            refund.failure_code,
            refund.balance_transaction_id,
            to_dt(now),
        )
        event = new_event(f"refund.{refund.status}", refund.env, refund.event_data())
        await ctx.publisher.stage(u, event, refund.org)
    return refund


@dataclass(frozen=True, slots=True)
class _Returns:
    """What a refund gives back of the payment's fee, and takes back of a partner's share."""

    fee: int
    commission: int
    partner: str | None


async def _returns(q: Queries, payment: Payment, refund: Refund) -> _Returns:
    captured = payment.amount + payment.tip
    before = int(
        await q.fetchval(
            "SELECT coalesce(sum(amount), 0) FROM refunds "
            "WHERE payment_id = $1 AND status = 'succeeded'",
            payment.id,
        )
    )
    after = before + refund.amount
    fee = given_back(payment.fee or 0, captured, before, after)
    share = await q.fetchrow(
        "SELECT org_id, amount FROM balance_transactions "
        "WHERE source_id = $1 AND type = 'partner_commission'",
        payment.id,
    )
    if share is None:
        return _Returns(fee, 0, None)
    commission = given_back(int(share["amount"]), captured, before, after)
    return _Returns(fee, commission, str(share["org_id"]))


async def _book(q: Queries, scope: Scope, refund: Refund, returned: _Returns, now: int) -> str:
    """Debit the refund, credit the fee given back, debit the partner's share; the id of the
    refund's own movement."""
    source = (refund.id, now)
    txn = await ledger.post(q, scope, refund.currency, "refund", refund.amount, *source)
    if returned.fee:
        await ledger.post(q, scope, refund.currency, "fee_refund", returned.fee, *source)
    if returned.partner is not None and returned.commission:
        partner = Scope(returned.partner, refund.env)
        await ledger.post(
            q,
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
    rows = await ctx.db.fetch(
        "SELECT id FROM refunds WHERE status = 'pending' AND created_at < $1 "
        "ORDER BY created_at LIMIT $2",
        to_dt(older_than_ms),
        limit,
    )
    for row in rows:
        await settle(ctx, row["id"])
    return len(rows)


async def get(q: Queries, scope: Scope, refund_id: str) -> Refund | None:
    row = await q.fetchrow(
        f"SELECT {_COLUMNS} FROM refunds WHERE id = $1 AND org_id = $2 AND env = $3",
        refund_id,
        scope.org,
        scope.env,
    )
    return None if row is None else _refund(row)


async def of_payment(
    q: Queries, payment_id: str, limit: int, cursor: str | None
) -> tuple[list[Refund], str | None]:
    """Refunds of one payment, newest first (the caller checked the payment's scope)."""
    select = f"SELECT {_COLUMNS} FROM refunds WHERE payment_id = $1"
    return await page(q, select, [payment_id], limit, cursor, _refund)


@dataclass(frozen=True, slots=True)
class RefundFilters:
    """What a list of refunds keeps; None keeps any. Times are ms, ``until_ms`` excluded."""

    payment_id: str | None = None
    status: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None


async def listed(
    q: Queries, scope: Scope, filters: RefundFilters, limit: int, cursor: str | None
) -> tuple[list[Refund], str | None]:
    """A scope's refunds newest first, those matching ``filters``."""
    select, args = narrowed(
        f"SELECT {_COLUMNS} FROM refunds WHERE org_id = $1 AND env = $2",
        [scope.org, scope.env],
        [
            ("payment_id = {}", filters.payment_id),
            ("status = {}", filters.status),
            ("created_at >= {}", opt_dt(filters.since_ms)),
            ("created_at < {}", opt_dt(filters.until_ms)),
        ],
    )
    return await page(q, select, args, limit, cursor, _refund)
