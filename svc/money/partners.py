"""The partner programme: partners, the organisations they connect, and their earnings.

A partner creates organisations for its customers; each gets one test and one live API key,
returned once. With the header ``Svc-Organisation`` a partner's key acts for one of its
connected organisations (same environment). For every fee charged to a connected
organisation the partner's balance receives 10 % of the fee's percentage part as a
``partner_commission`` movement (``svc.money.charges``); earnings sum those by month.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from svc import cursors
from svc.db import Queries, Unit
from svc.db.paging import page
from svc.db.times import to_dt, to_ms
from svc.envelope import iso_ms
from svc.ids import new_id
from svc.money.errors import NameTaken
from svc.money.model import Organisation
from svc.orgs import KEY_PREFIXES, Scope
from svc.orgs.keys import make_key

_COLUMNS = "id, name, partner_id, created_at"


@dataclass(frozen=True, slots=True)
class Earning:
    """What a partner earned on one connected organisation in one month (UTC)."""

    organisation_id: str
    month_ms: int
    currency: str
    amount: int

    def public(self) -> dict[str, Any]:
        return {
            "organisation_id": self.organisation_id,
            "month": iso_ms(self.month_ms)[:7],
            "currency": self.currency,
            "amount": self.amount,
        }


def _organisation(row: Any) -> Organisation:
    return Organisation(row["id"], row["name"], row["partner_id"], to_ms(row["created_at"]))


async def mark_partner(q: Queries, org_id: str) -> None:
    """Make ``org_id`` a partner (nothing changes when it is one)."""
    await q.execute("UPDATE organisations SET partner = true WHERE id = $1", org_id)


async def is_partner(q: Queries, org_id: str) -> bool:
    return bool(await q.fetchval("SELECT partner FROM organisations WHERE id = $1", org_id))


async def partner_of(q: Queries, org_id: str) -> str | None:
    """The partner ``org_id`` is connected to, if any."""
    found = await q.fetchval("SELECT partner_id FROM organisations WHERE id = $1", org_id)
    return None if found is None else str(found)


async def is_connected(q: Queries, partner_id: str, org_id: str) -> bool:
    """True when ``org_id`` is an organisation that partner ``partner_id`` created."""
    found = await q.fetchval(
        """SELECT true FROM organisations o JOIN organisations p ON p.id = o.partner_id
           WHERE o.id = $1 AND p.id = $2 AND p.partner""",
        org_id,
        partner_id,
    )
    return bool(found)


async def connect(
    unit: Unit, partner_id: str, name: str, now_ms: int
) -> tuple[Organisation, dict[str, str]]:
    """A new organisation of ``partner_id`` and its test and live keys (shown only here)."""
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
    keys = {}
    for env in KEY_PREFIXES:
        keys[env], _ = await make_key(unit, Scope(org.id, env))
    return org, keys


async def connected(
    q: Queries, partner_id: str, limit: int, cursor: str | None
) -> tuple[list[Organisation], str | None]:
    """The partner's organisations, newest first."""
    select = f"SELECT {_COLUMNS} FROM organisations WHERE partner_id = $1"
    return await page(q, select, [partner_id], limit, cursor, _organisation)


async def earnings(
    q: Queries, partner: Scope, limit: int, cursor: str | None
) -> tuple[list[Earning], str | None]:
    """Commissions of ``partner`` summed by month (UTC) and connected organisation, newest
    month first."""
    query = """SELECT month, connected_org_id, currency, amount FROM (
                   SELECT date_trunc('month', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
                              AS month,
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
    query += f" ORDER BY month DESC, connected_org_id DESC, currency DESC LIMIT ${len(args) + 1}"
    rows = await q.fetch(query, *args, limit + 1)
    items = [
        Earning(row["connected_org_id"], to_ms(row["month"]), row["currency"], int(row["amount"]))
        for row in rows[:limit]
    ]
    if len(rows) <= limit:
        return items, None
    last = items[-1]
    return items, cursors.encode(last.month_ms, f"{last.organisation_id}-{last.currency}")
