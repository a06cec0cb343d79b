"""Payouts: available balance sent to an organisation's bank account, ``paid`` at once.

The scheduler pays out every balance once per period of ``SVC_PAYOUT_SCHEDULE``
(``pay_out_due``); ``POST /v1/payouts`` pays out now in the test environment (``pay_out``).
Both lock the balance's row, the scheduler with ``SKIP LOCKED``: of two schedulers, one
pays a balance out and records the run, and the other skips it or finds it done, so a
balance is never paid out twice. A payout never exceeds what is available, so it never makes
the available balance negative. Each emits ``payout.paid``.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from svc.context import Context
from svc.db import Queries, Unit
from svc.db.paging import page
from svc.db.times import to_dt, to_ms
from svc.envelope import new_event
from svc.ids import new_id
from svc.money import ledger
from svc.money.errors import InsufficientFunds
from svc.money.model import PAYOUT_STATUS, Payout
from svc.money.schedule import DAY_MS, PayoutSchedule
from svc.orgs import Scope
from svc.payments.flow import now_ms

ARRIVAL_MS = DAY_MS
"""A payout arrives at the bank the next day."""
_COLUMNS = (
    "id, org_id, env, amount, currency, status, automatic, arrival_date, "
    "balance_transaction_id, created_at"
)


def _payout(row: Any) -> Payout:
    return Payout(
        id=row["id"],
        org=row["org_id"],
        env=row["env"],
        amount=row["amount"],
        currency=row["currency"],
        status=row["status"],
        automatic=row["automatic"],
        arrival_date=row["arrival_date"].isoformat(),
        balance_transaction_id=row["balance_transaction_id"],
        created_ms=to_ms(row["created_at"]),
    )


async def _pay(
    ctx: Context, unit: Unit, scope: Scope, currency: str, amount: int, automatic: bool, now: int
) -> Payout:
    payout_id = new_id("po")
    txn = await ledger.post(unit, scope, currency, "payout", amount, payout_id, now)
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
    await unit.execute(
        f"INSERT INTO payouts ({_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        payout.id,
        payout.org,
        payout.env,
        payout.amount,
        payout.currency,
        payout.status,
        payout.automatic,
        date.fromisoformat(payout.arrival_date),
        payout.balance_transaction_id,
        to_dt(now),
    )
    event = new_event("payout.paid", scope.env, payout.event_data())
    await ctx.publisher.stage(unit, event, scope.org)
    return payout


async def pay_out(
    ctx: Context, unit: Unit, scope: Scope, currency: str, amount: int | None
) -> Payout:
    """Pay out ``amount`` (default: all that is available) now; raises InsufficientFunds."""
    now = now_ms()
    await ledger.lock(unit, scope, currency, now)
    available = (await ledger.balance(unit, scope, currency, now)).available
    wanted = available if amount is None else amount
    if available <= 0 or wanted > available:
        raise InsufficientFunds(max(available, 0))
    return await _pay(ctx, unit, scope, currency, wanted, False, now)


async def pay_out_due(ctx: Context, schedule: PayoutSchedule, now: int | None = None) -> int:
    """Pay out every balance not yet looked at in the current period; returns the number of
    payouts made. Each balance is locked with ``SKIP LOCKED`` and its run recorded in the
    transaction of its payout, so concurrent schedulers never pay one out twice."""
    at = now_ms() if now is None else now
    period_start = to_dt(schedule.period_start(at))
    paid = 0
    while True:
        async with ctx.unit() as unit:
            row = await unit.fetchrow(
                """SELECT org_id, env, currency FROM balances WHERE paid_through < $1
                   ORDER BY paid_through LIMIT 1 FOR UPDATE SKIP LOCKED""",
                period_start,
            )
            if row is None:
                return paid
            scope, currency = Scope(row["org_id"], row["env"]), row["currency"]
            available = (await ledger.balance(unit, scope, currency, at)).available
            if available > 0:
                await _pay(ctx, unit, scope, currency, available, True, at)
                paid += 1
            await unit.execute(
                """UPDATE balances SET paid_through = $4
                   WHERE org_id = $1 AND env = $2 AND currency = $3""",
                scope.org,
                scope.env,
                currency,
                to_dt(at),
            )


async def get(q: Queries, scope: Scope, payout_id: str) -> Payout | None:
    row = await q.fetchrow(
        f"SELECT {_COLUMNS} FROM payouts WHERE id = $1 AND org_id = $2 AND env = $3",
        payout_id,
        scope.org,
        scope.env,
    )
    return None if row is None else _payout(row)


async def listing(
    q: Queries, scope: Scope, limit: int, cursor: str | None
) -> tuple[list[Payout], str | None]:
    """Payouts of ``scope``, newest first."""
    select = f"SELECT {_COLUMNS} FROM payouts WHERE org_id = $1 AND env = $2"
    return await page(q, select, [scope.org, scope.env], limit, cursor, _payout)
