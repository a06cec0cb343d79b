"""Each organisation's prices: ``SVC_PRICING`` unless the organisation has its own rates."""

from __future__ import annotations

from svc.db import Database, Queries, Unit
from svc.money.model.pricing import Pricing, Rate


class Tariffs:
    """The rates an organisation pays instead of the defaults."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def overrides(self, org_id: str, q: Queries | None = None) -> dict[str, Rate]:
        """The organisation's own rates, by kind (empty: it pays the defaults)."""
        rows = await (q or self._db).fetch(
            "SELECT kind, basis_points, fixed FROM pricing WHERE org_id = $1", org_id
        )
        return {str(row["kind"]): Rate(int(row["basis_points"]), int(row["fixed"])) for row in rows}

    async def pricing_of(self, defaults: Pricing, org_id: str, q: Queries | None = None) -> Pricing:
        """What ``org_id`` pays."""
        own = await self.overrides(org_id, q)
        return defaults.overridden(own) if own else defaults

    async def set_rates(self, unit: Unit, org_id: str, rates: Pricing) -> None:
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

    async def reset(self, unit: Unit, org_id: str) -> None:
        """Back to the defaults."""
        await unit.execute("DELETE FROM pricing WHERE org_id = $1", org_id)
