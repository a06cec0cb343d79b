"""Organisations in PostgreSQL: by name, partners and the organisations they connect, and
what partners earn on them (their commissions in the ledger, summed by month)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from svc import cursors
from svc.db import Database, Queries, Unit
from svc.db.paging import page
from svc.db.times import to_dt, to_ms
from svc.ids import new_id
from svc.orgs.errors import NameTaken
from svc.orgs.model import Earning, Organisation, Scope

_COLUMNS = "id, name, partner_id, created_at"


class Organisations:
    """Organisations by name (the id is made on first use), partners and their connected
    organisations."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def ensure(self, name: str, q: Queries | None = None) -> str:
        """The id of the organisation called ``name``, created if it does not exist."""
        for _ in range(3):  # a concurrent creator may commit between our insert and read
            found = await (q or self._db).fetchval(
                """WITH made AS (
                       INSERT INTO organisations (id, name) VALUES ($1, $2)
                       ON CONFLICT (name) DO NOTHING RETURNING id)
                   SELECT id FROM made UNION ALL SELECT id FROM organisations WHERE name = $2
                   LIMIT 1""",
                new_id("org"),
                name,
            )
            if found is not None:
                return str(found)
        raise RuntimeError(f"organisation {name!r} could not be created or found")

    async def id_of(self, name: str, q: Queries | None = None) -> str | None:
        """The id of the organisation called ``name``, or None when there is none."""
        found = await (q or self._db).fetchval("SELECT id FROM organisations WHERE name = $1", name)
        return None if found is None else str(found)

    async def existing(self, ids: Sequence[str]) -> set[str]:
        """Those of ``ids`` that name an organisation (one query)."""
        rows = await self._db.fetch(
            "SELECT id FROM organisations WHERE id = ANY($1::text[])", list(ids)
        )
        return {str(row["id"]) for row in rows}

    async def name_of(self, org_id: str) -> str | None:
        found = await self._db.fetchval("SELECT name FROM organisations WHERE id = $1", org_id)
        return None if found is None else str(found)

    async def listing(self) -> list[tuple[str, str]]:
        """``(id, name)`` of every organisation, oldest first."""
        rows = await self._db.fetch("SELECT id, name FROM organisations ORDER BY created_at, id")
        return [(str(row["id"]), str(row["name"])) for row in rows]

    async def mark_partner(self, org_id: str, q: Queries | None = None) -> None:
        """Make ``org_id`` a partner (nothing changes when it is one)."""
        await (q or self._db).execute(
            "UPDATE organisations SET partner = true WHERE id = $1", org_id
        )

    async def is_partner(self, org_id: str, q: Queries | None = None) -> bool:
        found = await (q or self._db).fetchval(
            "SELECT partner FROM organisations WHERE id = $1", org_id
        )
        return bool(found)

    async def partner_of(self, org_id: str, q: Queries | None = None) -> str | None:
        """The partner ``org_id`` is connected to, if any."""
        found = await (q or self._db).fetchval(
            "SELECT partner_id FROM organisations WHERE id = $1", org_id
        )
        return None if found is None else str(found)

    async def is_connected(self, partner_id: str, org_id: str, q: Queries | None = None) -> bool:
        """True when ``org_id`` is an organisation that partner ``partner_id`` created."""
        found = await (q or self._db).fetchval(
            """SELECT true FROM organisations o JOIN organisations p ON p.id = o.partner_id
               WHERE o.id = $1 AND p.id = $2 AND p.partner""",
            org_id,
            partner_id,
        )
        return bool(found)

    async def create_connected(
        self, unit: Unit, partner_id: str, name: str, now_ms: int
    ) -> Organisation:
        """A new organisation of ``partner_id``; raises NameTaken when the name is."""
        org = Organisation(new_id("org"), name, partner_id, now_ms)
        made = await unit.fetchval(
            """INSERT INTO organisations (id, name, partner_id, created_at) VALUES ($1, $2, $3, $4)
               ON CONFLICT (name) DO NOTHING RETURNING id""",
            org.id,
            org.name,
            partner_id,
            to_dt(now_ms),
        )
        if made is None:
            raise NameTaken(name)
        return org

    async def connected(
        self, partner_id: str, limit: int, cursor: str | None
    ) -> tuple[list[Organisation], str | None]:
        """The partner's organisations, newest first."""
        select = f"SELECT {_COLUMNS} FROM organisations WHERE partner_id = $1"
        return await page(self._db, select, [partner_id], limit, cursor, _organisation)

    async def earnings(
        self, partner: Scope, limit: int, cursor: str | None
    ) -> tuple[list[Earning], str | None]:
        """Commissions of ``partner`` summed by month (UTC) and connected organisation, newest
        month first."""
        query = """SELECT month, connected_org_id, currency, amount FROM (
                       SELECT date_trunc('month', created_at AT TIME ZONE 'UTC')
                                  AT TIME ZONE 'UTC' AS month,
                              connected_org_id, currency, sum(amount) AS amount
                       FROM balance_transactions
                       WHERE org_id = $1 AND env = $2
                         AND type IN ('partner_commission', 'partner_commission_reversal')
                       GROUP BY 1, 2, 3) AS sums"""
        args: list[Any] = [partner.org, partner.env]
        if cursor is not None:
            ms, position = cursors.decode(cursor)
            last_org, _, last_currency = position.rpartition("-")
            query += " WHERE (month, connected_org_id, currency) < ($3, $4, $5)"
            args += [to_dt(ms), last_org, last_currency]
        query += (
            f" ORDER BY month DESC, connected_org_id DESC, currency DESC LIMIT ${len(args) + 1}"
        )
        rows = await self._db.fetch(query, *args, limit + 1)
        items = [
            Earning(
                row["connected_org_id"], to_ms(row["month"]), row["currency"], int(row["amount"])
            )
            for row in rows[:limit]
        ]
        if len(rows) <= limit:
            return items, None
        last = items[-1]
        return items, cursors.encode(last.month_ms, f"{last.organisation_id}-{last.currency}")


def _organisation(row: Any) -> Organisation:
    return Organisation(row["id"], row["name"], row["partner_id"], to_ms(row["created_at"]))
