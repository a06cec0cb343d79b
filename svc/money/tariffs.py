"""Each organisation's prices: ``SVC_PRICING`` unless the organisation has its own rates."""

from __future__ import annotations

from svc.db import Queries, Unit
from svc.money.pricing import Pricing, Rate


async def overrides(q: Queries, org_id: str) -> dict[str, Rate]:
    """The organisation's own rates, by kind (empty: it pays the defaults)."""
    rows = await q.fetch("SELECT kind, basis_points, fixed FROM pricing WHERE org_id = $1", org_id)
    return {str(row["kind"]): Rate(int(row["basis_points"]), int(row["fixed"])) for row in rows}


async def pricing_of(q: Queries, defaults: Pricing, org_id: str) -> Pricing:
    """What ``org_id`` pays."""
    own = await overrides(q, org_id)
    return defaults.overridden(own) if own else defaults


async def set_rates(unit: Unit, org_id: str, rates: Pricing) -> None:
    """Give the organisation its own rates for the kinds in ``rates``."""
    for kind, rate in rates.rates:
        await unit.execute(
            """INSERT INTO pricing (org_id, kind, basis_points, fixed) VALUES ($1, $2, $3, $4)
               ON CONFLICT (org_id, kind) DO UPDATE
               SET basis_points = excluded.basis_points, fixed = excluded.fixed""",
            org_id,
            kind,
            rate.basis_points,
            rate.fixed,
        )


async def reset(q: Queries, org_id: str) -> None:
    """Back to the defaults."""
    await q.execute("DELETE FROM pricing WHERE org_id = $1", org_id)
