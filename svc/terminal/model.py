"""A terminal record and its API and event views."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from svc.envelope import iso_ms

SECRET_PREFIX = "trmsec_"
SIMULATOR_NAME = "Simulation terminal"


@dataclass(frozen=True, slots=True)
class Terminal:
    """A terminal; online while a device connection (``conn``) holds it, working on
    ``current`` (a payment id, or empty)."""

    id: str
    org: str
    env: str
    name: str
    simulated: bool
    status: str
    conn: str
    current: str
    created_ms: int
    status_ms: int

    @property
    def online(self) -> bool:
        return self.status == "online"

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "terminal",
            "name": self.name,
            "status": self.status,
            "simulated": self.simulated,
            "environment": self.env,
            "current_payment_id": self.current or None,
            "created_at": iso_ms(self.created_ms),
            "status_changed_at": iso_ms(self.status_ms),
        }

    def event_data(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "terminal",
            "status": self.status,
            "name": self.name,
            "simulated": self.simulated,
        }
