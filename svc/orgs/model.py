"""Organisations: the scope an API key sees, a partner's connected organisations and what the
partner earns on them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from svc.envelope import iso_ms


@dataclass(frozen=True, slots=True)
class Scope:
    """One organisation in one environment (``test`` or ``live``)."""

    org: str
    env: str


@dataclass(frozen=True, slots=True)
class Organisation:
    """An organisation a partner created (connected to it)."""

    id: str
    name: str
    partner_id: str | None
    created_ms: int

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "organisation",
            "name": self.name,
            "partner_id": self.partner_id,
            "created_at": iso_ms(self.created_ms),
        }


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
