"""A webhook endpoint and its API view."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from svc.events import iso_ms


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A stored endpoint; ``secret`` never leaves the service after creation."""

    id: str
    org: str
    env: str
    url: str
    events: tuple[str, ...]
    secret: str
    description: str
    created_ms: int

    def public(self) -> dict[str, Any]:
        """The API view: everything but the secret and the organisation id."""
        return {
            "id": self.id,
            "object": "webhook_endpoint",
            "url": self.url,
            "events": list(self.events),
            "description": self.description,
            "environment": self.env,
            "created_at": iso_ms(self.created_ms),
        }
