"""The double-entry ledger: every money movement is one balance transaction whose entries sum
to zero, written in the caller's unit of work; balances are sums of entries.

Each movement has two legs: the organisation's ``balance`` and one counter account of the
platform (``card_network`` for money from and back to cardholders, ``fees`` for the
platform's income, ``bank`` for payouts to the organisation's bank account). The database
checks at commit that every transaction balances and refuses updates and deletes.

Credits from a payment (the payment, its fee, a partner's commission on it) become available
``SVC_SETTLEMENT_DELAY`` after they are written and count as pending until then; debits
(refunds, chargebacks, payouts) are available at once. A debit that must not overdraw the
balance takes ``lock`` first, so checks and debits of one balance happen one at a time.
"""

from __future__ import annotations

from typing import Any

from svc.db import Database, Queries, Unit
from svc.db.paging import page
from svc.db.times import to_dt, to_ms
from svc.ids import new_id
from svc.money.model.records import TYPES, Balance, BalanceTransaction
from svc.orgs import Scope

_COLUMNS = (
    "id, org_id, env, currency, type, amount, source_id, connected_org_id, available_on, created_at"
)


def _transaction(row: Any) -> BalanceTransaction:
    return BalanceTransaction(
        id=row["id"],
        org=row["org_id"],
        env=row["env"],
        currency=row["currency"],
        type=row["type"],
        amount=row["amount"],
        source_id=row["source_id"],
        available_ms=to_ms(row["available_on"]),
        created_ms=to_ms(row["created_at"]),
        connected_org=row["connected_org_id"],
    )


class Ledger:
    """Balance transactions and their entries, and the balances they sum to."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def post(
        self,
        q: Queries,
        scope: Scope,
        currency: str,
        kind: str,
        amount: int,
        source_id: str,
        now_ms: int,
        available_ms: int | None = None,
        connected_org: str | None = None,
    ) -> BalanceTransaction:
        """Write one movement of ``amount`` (> 0) Rappen of type ``kind``; one round trip."""
        if amount <= 0:
            raise ValueError(f"a movement moves a positive amount, not {amount}")
        counter, sign = TYPES[kind]
        txn = BalanceTransaction(
            id=new_id("txn"),
            org=scope.org,
            env=scope.env,
            currency=currency,
            type=kind,
            amount=sign * amount,
            source_id=source_id,
            available_ms=now_ms if available_ms is None else available_ms,
            created_ms=now_ms,
            connected_org=connected_org,
        )
        await q.execute(
            f"""WITH opened AS (
                   INSERT INTO balances (org_id, env, currency, paid_through)
                   VALUES ($2, $3, $4, $10) ON CONFLICT DO NOTHING),
               moved AS (
                   INSERT INTO balance_transactions ({_COLUMNS})
                   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10))
               INSERT INTO ledger_entries (transaction_id, account, amount)
               VALUES ($1, 'balance', $6), ($1, $11, -$6::bigint)""",
            txn.id,
            txn.org,
            txn.env,
            txn.currency,
            txn.type,
            txn.amount,
            txn.source_id,
            txn.connected_org,
            to_dt(txn.available_ms),
            to_dt(txn.created_ms),
            counter,
        )
        return txn

    async def lock(self, unit: Unit, scope: Scope, currency: str, now_ms: int) -> None:
        """Hold the balance of ``scope`` in ``currency`` until ``unit`` ends."""
        await unit.execute(
            """INSERT INTO balances (org_id, env, currency, paid_through) VALUES ($1, $2, $3, $4)
               ON CONFLICT DO NOTHING""",
            scope.org,
            scope.env,
            currency,
            to_dt(now_ms),
        )
        await unit.execute(
            "SELECT 1 FROM balances WHERE org_id = $1 AND env = $2 AND currency = $3 FOR UPDATE",
            scope.org,
            scope.env,
            currency,
        )

    async def balance(
        self, scope: Scope, currency: str, now_ms: int, q: Queries | None = None
    ) -> Balance:
        """The balance of ``scope`` in ``currency`` at ``now_ms``: the sum of its movements."""
        row = await (q or self._db).fetchrow(
            """SELECT coalesce(sum(amount) FILTER (WHERE available_on <= $4), 0) AS available,
                      coalesce(sum(amount) FILTER (WHERE available_on > $4), 0) AS pending
               FROM balance_transactions WHERE org_id = $1 AND env = $2 AND currency = $3""",
            scope.org,
            scope.env,
            currency,
            to_dt(now_ms),
        )
        return Balance(currency, int(row["available"]), int(row["pending"]))

    async def balances(
        self, scope: Scope, currencies: tuple[str, ...], now_ms: int
    ) -> list[Balance]:
        """The balance in each of ``currencies`` and in any other the scope holds money in."""
        rows = await self._db.fetch(
            "SELECT DISTINCT currency FROM balances WHERE org_id = $1 AND env = $2",
            scope.org,
            scope.env,
        )
        held = sorted({*currencies, *(str(row["currency"]) for row in rows)})
        return [await self.balance(scope, currency, now_ms) for currency in held]

    async def commission(self, q: Queries, payment_id: str) -> tuple[str, int] | None:
        """The partner and the commission it received on a payment, if any."""
        row = await q.fetchrow(
            "SELECT org_id, amount FROM balance_transactions "
            "WHERE source_id = $1 AND type = 'partner_commission'",
            payment_id,
        )
        return None if row is None else (str(row["org_id"]), int(row["amount"]))

    async def get(self, scope: Scope, txn_id: str) -> BalanceTransaction | None:
        row = await self._db.fetchrow(
            f"""SELECT {_COLUMNS} FROM balance_transactions
                WHERE id = $1 AND org_id = $2 AND env = $3""",
            txn_id,
            scope.org,
            scope.env,
        )
        return None if row is None else _transaction(row)

    async def transactions(
        self, scope: Scope, limit: int, cursor: str | None, source_id: str | None = None
    ) -> tuple[list[BalanceTransaction], str | None]:
        """Movements of ``scope`` newest first (only those of ``source_id`` when given)."""
        select = f"SELECT {_COLUMNS} FROM balance_transactions WHERE org_id = $1 AND env = $2"
        args: list[Any] = [scope.org, scope.env]
        if source_id is not None:
            select += " AND source_id = $3"
            args.append(source_id)
        return await page(self._db, select, args, limit, cursor, _transaction)
