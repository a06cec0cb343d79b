"""Chargebacks in PostgreSQL: written once, when they arrive; at most one per payment."""

from __future__ import annotations

from typing import Any

from svc.db import Database, Queries, Unit
from svc.db.paging import page
from svc.db.times import to_dt, to_ms
from svc.money.model.records import Chargeback
from svc.orgs.model import Scope

_COLUMNS = "id, org_id, env, payment_id, amount, fee, currency, reason, status, created_at"


class Chargebacks:
    """Chargeback storage."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def exists(self, q: Queries, payment_id: str) -> bool:
        """True when the payment has its chargeback."""
        found = await q.fetchval("SELECT true FROM chargebacks WHERE payment_id = $1", payment_id)
        return bool(found)

    async def insert(self, unit: Unit, chargeback: Chargeback) -> None:
        await unit.execute(
            f"""INSERT INTO chargebacks ({_COLUMNS})
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)""",
            chargeback.id,
            chargeback.org,
            chargeback.env,
            chargeback.payment_id,
            chargeback.amount,
            chargeback.fee,
            chargeback.currency,
            chargeback.reason,
            chargeback.status,
            to_dt(chargeback.created_ms),
        )

    async def get(self, scope: Scope, chargeback_id: str) -> Chargeback | None:
        row = await self._db.fetchrow(
            f"SELECT {_COLUMNS} FROM chargebacks WHERE id = $1 AND org_id = $2 AND env = $3",
            chargeback_id,
            scope.org,
            scope.env,
        )
        return None if row is None else _chargeback(row)

    async def listing(
        self, scope: Scope, limit: int, cursor: str | None
    ) -> tuple[list[Chargeback], str | None]:
        """Chargebacks of ``scope``, newest first."""
        select = f"SELECT {_COLUMNS} FROM chargebacks WHERE org_id = $1 AND env = $2"
        return await page(self._db, select, [scope.org, scope.env], limit, cursor, _chargeback)


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
