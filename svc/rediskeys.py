"""Redis key names; every key starts with the namespace so namespaces never see each other.

Redis holds only what may be lost (see DESIGN.md): the wake-up channel and leases.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Keys:
    """Key builder for one namespace."""

    ns: str

    @property
    def signals(self) -> str:
        """The pub/sub channel of wake-up signals (see ``svc.signals``)."""
        return f"{self.ns}:signals"

    @property
    def endpoint_changes(self) -> str:
        """The pub/sub channel on which endpoint changes are announced, ``[org, env]``."""
        return f"{self.ns}:endpoint-changes"

    def terminal_alive(self, terminal_id: str) -> str:
        return f"{self.ns}:trmalive:{terminal_id}"

    def simulator_lease(self, terminal_id: str) -> str:
        return f"{self.ns}:trmlease:{terminal_id}"
