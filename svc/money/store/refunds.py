"""Refunds in PostgreSQL, and what of a payment is refunded or charged back already.

A refund is written ``pending`` in its creator's unit and changed once, when it is settled,
under a lock of its row (``lock``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from svc.db import Database, Queries, Unit
from svc.db.paging import narrowed, page
from svc.db.times import opt_dt, to_dt, to_ms
from svc.money.model.records import Refund
from svc.orgs.model import Scope

_COLUMNS = (
    "id, org_id, env, payment_id, amount, currency, status, failure_code, "
    "balance_transaction_id, created_at, updated_at"
)


@dataclass(frozen=True, slots=True)
class RefundFilters:
    """What a list of refunds keeps; None keeps any. Times are ms, ``until_ms`` excluded."""

    payment_id: str | None = None
    status: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None


class Refunds:
    """Refund storage."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def taken(self, q: Queries, payment_id: str) -> int:
        """What of a payment is refunded (or being refunded) or charged back."""
        value = await q.fetchval(
            """SELECT (SELECT coalesce(sum(amount), 0) FROM refunds
                       WHERE payment_id = $1 AND status <> 'failed')
                    + (SELECT coalesce(sum(amount), 0) FROM chargebacks WHERE payment_id = $1)""",
            payment_id,
        )
        return int(value)

    async def refunded(self, q: Queries, payment_id: str) -> int:
        """What of a payment succeeded refunds gave back."""
        value = await q.fetchval(
            "SELECT coalesce(sum(amount), 0) FROM refunds "
            "WHERE payment_id = $1 AND status = 'succeeded'",
            payment_id,
        )
        return int(value)

    async def insert(self, unit: Unit, refund: Refund) -> None:
        await unit.execute(
            f"""INSERT INTO refunds ({_COLUMNS})
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)""",
            refund.id,
            refund.org,
            refund.env,
            refund.payment_id,
            refund.amount,
            refund.currency,
            refund.status,
            refund.failure_code,
            refund.balance_transaction_id,
            to_dt(refund.created_ms),
            to_dt(refund.updated_ms),
        )

    async def payment_of(self, q: Queries, refund_id: str) -> str | None:
        """The id of the payment a refund gives back, or None for no such refund."""
        found = await q.fetchval("SELECT payment_id FROM refunds WHERE id = $1", refund_id)
        return None if found is None else str(found)

    async def lock(self, unit: Unit, refund_id: str) -> Refund | None:
        """The refund, its row locked until ``unit`` ends."""
        row = await unit.fetchrow(
            f"SELECT {_COLUMNS} FROM refunds WHERE id = $1 FOR UPDATE", refund_id
        )
        return None if row is None else _refund(row)

    async def settled(self, unit: Unit, refund: Refund) -> None:
        """Write a refund's settlement: its status, failure and movement."""
        await unit.execute(
            """UPDATE refunds SET status = $2, failure_code = $3, balance_transaction_id = $4,
                   updated_at = $5 WHERE id = $1""",
            refund.id,
            refund.status,
            refund.failure_code,
            refund.balance_transaction_id,
            to_dt(refund.updated_ms),
        )

    async def pending(self, older_than_ms: int, limit: int) -> list[str]:
        """Ids of refunds left pending since before ``older_than_ms``, oldest first."""
        rows = await self._db.fetch(
            "SELECT id FROM refunds WHERE status = 'pending' AND created_at < $1 "
            "ORDER BY created_at LIMIT $2",
            to_dt(older_than_ms),
            limit,
        )
        return [str(row["id"]) for row in rows]

    async def get(self, scope: Scope, refund_id: str) -> Refund | None:
        row = await self._db.fetchrow(
            f"SELECT {_COLUMNS} FROM refunds WHERE id = $1 AND org_id = $2 AND env = $3",
            refund_id,
            scope.org,
            scope.env,
        )
        return None if row is None else _refund(row)

    async def of_payment(
        self, payment_id: str, limit: int, cursor: str | None
    ) -> tuple[list[Refund], str | None]:
        """Refunds of one payment, newest first (the caller checked the payment's scope)."""
        select = f"SELECT {_COLUMNS} FROM refunds WHERE payment_id = $1"
        return await page(self._db, select, [payment_id], limit, cursor, _refund)

    async def listed(
        self, scope: Scope, filters: RefundFilters, limit: int, cursor: str | None
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
        return await page(self._db, select, args, limit, cursor, _refund)


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
