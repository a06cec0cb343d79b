"""A scope's payments, newest first, paged with the API's opaque cursors (the dashboard's list).

The API has no payment list; this page reads the payments table the way the API's other
lists read theirs, with the same cursors.
"""

from __future__ import annotations

from typing import Any

from svc import cursors
from svc.db import Database
from svc.db.times import to_dt
from svc.orgs import Scope
from svc.payments.model import Payment
from svc.payments.store import _COLUMNS as PAYMENT_COLUMNS
from svc.payments.store import _payment


class PaymentPages:
    """Pages of one scope's payments."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def page(
        self, scope: Scope, limit: int, cursor: str | None
    ) -> tuple[list[Payment], str | None]:
        """Payments newest first and the cursor of the next page (None on the last page)."""
        query = f"SELECT {PAYMENT_COLUMNS} FROM payments WHERE org_id = $1 AND env = $2"
        args: list[Any] = [scope.org, scope.env]
        if cursor is not None:
            ms, last_id = cursors.decode(cursor)
            query += " AND (created_at, id) < ($3, $4)"
            args += [to_dt(ms), last_id]
        query += f" ORDER BY created_at DESC, id DESC LIMIT ${len(args) + 1}"
        rows = await self._db.fetch(query, *args, limit + 1)
        payments = [_payment(row) for row in rows[:limit]]
        if len(rows) <= limit or not payments:
            return payments, None
        return payments, cursors.encode(payments[-1].created_ms, payments[-1].id)
