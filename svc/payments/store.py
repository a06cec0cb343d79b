"""Payments in PostgreSQL. Transitions lock the row (``FOR UPDATE``) in the caller's unit, so
of two concurrent transitions of one payment exactly one applies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import asyncpg

from svc.db import Database, Queries, Unit
from svc.db.paging import narrowed, page
from svc.db.times import opt_dt, opt_ms, to_dt, to_ms
from svc.orgs import Scope
from svc.payments.model import Payment

_COLUMNS = (
    "id, org_id, env, status, amount, currency, channel, tip, success_url, checkout_token, "
    "terminal_id, tip_prompt, failure_code, cancel_reason, created_at, updated_at, expires_at, "
    "fee"
)


def _payment(row: Any) -> Payment:
    return Payment(
        id=row["id"],
        org=row["org_id"],
        env=row["env"],
        status=row["status"],
        amount=row["amount"],
        currency=row["currency"],
        channel=row["channel"],
        created_ms=to_ms(row["created_at"]),
        updated_ms=to_ms(row["updated_at"]),
        success_url=row["success_url"],
        checkout_token=row["checkout_token"],
        terminal_id=row["terminal_id"],
        tip_prompt=row["tip_prompt"],
        tip=row["tip"],
        failure_code=row["failure_code"],
        cancel_reason=row["cancel_reason"],
        expires_ms=opt_ms(row["expires_at"]),
        fee=row["fee"],
    )


@dataclass(frozen=True, slots=True)
class PaymentFilters:
    """What a list of payments keeps; None keeps any. Times are ms, ``until_ms`` excluded."""

    status: str | None = None
    channel: str | None = None
    terminal_id: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None


class Payments:
    """Payment storage."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def insert(self, unit: Unit, p: Payment) -> None:
        """Add the payment to ``unit`` (a staged write: see ``Unit.write``)."""
        unit.write(
            f"""INSERT INTO payments ({_COLUMNS}) VALUES
                ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
                 $18)""",
            p.id,
            p.org,
            p.env,
            p.status,
            p.amount,
            p.currency,
            p.channel,
            p.tip,
            p.success_url,
            p.checkout_token,
            p.terminal_id,
            p.tip_prompt,
            p.failure_code,
            p.cancel_reason,
            to_dt(p.created_ms),
            to_dt(p.updated_ms),
            opt_dt(p.expires_ms),
            p.fee,
        )

    async def get(self, payment_id: str, q: Queries | None = None) -> Payment | None:
        row = await (q or self._db).fetchrow(
            f"SELECT {_COLUMNS} FROM payments WHERE id = $1", payment_id
        )
        return None if row is None else _payment(row)

    async def get_scoped(self, scope: Scope, payment_id: str) -> Payment | None:
        row = await self._db.fetchrow(
            f"SELECT {_COLUMNS} FROM payments WHERE id = $1 AND org_id = $2 AND env = $3",
            payment_id,
            scope.org,
            scope.env,
        )
        return None if row is None else _payment(row)

    async def page(
        self,
        scope: Scope,
        limit: int,
        cursor: str | None,
        filters: PaymentFilters | None = None,
    ) -> tuple[list[Payment], str | None]:
        """A scope's payments newest first, those matching ``filters`` (all without), and the
        opaque cursor of the next page (None on the last page): the API's and the dashboard's
        list."""
        f = filters or PaymentFilters()
        select, args = narrowed(
            f"SELECT {_COLUMNS} FROM payments WHERE org_id = $1 AND env = $2",
            [scope.org, scope.env],
            [
                ("status = {}", f.status),
                ("channel = {}", f.channel),
                ("terminal_id = {}", f.terminal_id),
                ("created_at >= {}", opt_dt(f.since_ms)),
                ("created_at < {}", opt_dt(f.until_ms)),
            ],
        )
        return await page(self._db, select, args, limit, cursor, _payment)

    async def lock(self, unit: Unit, payment_id: str) -> Payment | None:
        """The payment, locked until ``unit`` ends: concurrent transitions queue here."""
        row = await unit.fetchrow(
            f"SELECT {_COLUMNS} FROM payments WHERE id = $1 FOR UPDATE", payment_id
        )
        return None if row is None else _payment(row)

    async def update(self, unit: Unit, p: Payment) -> None:
        """Write the mutable fields of a payment locked in ``unit`` (a staged write: it goes
        to PostgreSQL with the event and outbox rows of the change, in one statement)."""
        unit.write(
            """UPDATE payments SET status = $2, tip = $3, failure_code = $4, cancel_reason = $5,
                   updated_at = $6, expires_at = $7, fee = $8
               WHERE id = $1""",
            p.id,
            p.status,
            p.tip,
            p.failure_code,
            p.cancel_reason,
            to_dt(p.updated_ms),
            opt_dt(p.expires_ms),
            p.fee,
        )

    async def add_step(self, payment_id: str, step: str) -> int:
        """Record a progress step of a terminal payment; returns its number (from 1)."""
        for _ in range(3):  # steps of one payment come from one device, one at a time
            try:
                seq = await self._db.fetchval(
                    """INSERT INTO payment_steps (payment_id, seq, step)
                       SELECT $1, coalesce(max(seq), 0) + 1, $2 FROM payment_steps
                       WHERE payment_id = $1
                       RETURNING seq""",
                    payment_id,
                    step,
                )
                return int(seq)
            except asyncpg.UniqueViolationError:
                continue
        raise RuntimeError(f"could not number a step of {payment_id}")

    async def with_steps(self, payment_id: str) -> tuple[Payment | None, list[str]]:
        """The payment and its terminal steps in order, read together (one round trip)."""
        row = await self._db.fetchrow(
            f"""SELECT {_COLUMNS}, ARRAY(SELECT s.step FROM payment_steps s
                                         WHERE s.payment_id = p.id ORDER BY s.seq) AS steps
                FROM payments p WHERE p.id = $1""",
            payment_id,
        )
        return (None, []) if row is None else (_payment(row), list(row["steps"]))

    async def due(self, at_ms: int, limit: int = 500) -> list[str]:
        """Open payments whose deadline is at or before ``at_ms``, earliest first."""
        rows = await self._db.fetch(
            """SELECT id FROM payments
               WHERE status IN ('pending', 'authorized') AND expires_at <= $1
               ORDER BY expires_at LIMIT $2""",
            to_dt(at_ms),
            limit,
        )
        return [row["id"] for row in rows]
