"""Payouts in PostgreSQL, and the balances whose payout run of a period is still due.

Each balance row records until when it was paid out (``paid_through``); the scheduler takes
the next balance due with ``SKIP LOCKED`` and records its run in the same transaction as its
payout, so concurrent schedulers never pay one balance out twice.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from svc.db import Database, Unit
from svc.db.paging import page
from svc.db.times import to_dt, to_ms
from svc.money.model.records import Payout
from svc.orgs.model import Scope

_COLUMNS = (
    "id, org_id, env, amount, currency, status, automatic, arrival_date, "
    "balance_transaction_id, created_at"
)


class Payouts:
    """Payout storage and the payout runs of balances."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def insert(self, unit: Unit, payout: Payout) -> None:
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
            to_dt(payout.created_ms),
        )

    async def next_due(self, unit: Unit, period_start_ms: int) -> tuple[Scope, str] | None:
        """The scope and currency of a balance not paid out since ``period_start_ms``, its row
        locked until ``unit`` ends (one another scheduler holds is skipped); None: none."""
        row = await unit.fetchrow(
            """SELECT org_id, env, currency FROM balances WHERE paid_through < $1
               ORDER BY paid_through LIMIT 1 FOR UPDATE SKIP LOCKED""",
            to_dt(period_start_ms),
        )
        return None if row is None else (Scope(row["org_id"], row["env"]), str(row["currency"]))

    async def paid_through(self, unit: Unit, scope: Scope, currency: str, at_ms: int) -> None:
        """Record the balance's payout run at ``at_ms``."""
        await unit.execute(
            """UPDATE balances SET paid_through = $4
               WHERE org_id = $1 AND env = $2 AND currency = $3""",
            scope.org,
            scope.env,
            currency,
            to_dt(at_ms),
        )

    async def get(self, scope: Scope, payout_id: str) -> Payout | None:
        row = await self._db.fetchrow(
            f"SELECT {_COLUMNS} FROM payouts WHERE id = $1 AND org_id = $2 AND env = $3",
            payout_id,
            scope.org,
            scope.env,
        )
        return None if row is None else _payout(row)

    async def listing(
        self, scope: Scope, limit: int, cursor: str | None
    ) -> tuple[list[Payout], str | None]:
        """Payouts of ``scope``, newest first."""
        select = f"SELECT {_COLUMNS} FROM payouts WHERE org_id = $1 AND env = $2"
        return await page(self._db, select, [scope.org, scope.env], limit, cursor, _payout)


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
