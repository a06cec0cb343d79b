"""Redis key names; every key starts with the namespace so namespaces never see each other.

Redis holds only what may be lost (see docs/architecture.md): the wake-up channel and the
change notices of caches, leases, rate-limit state and dashboard sessions.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Keys:
    """Key builder for one namespace."""

    ns: str

    @property
    def signals(self) -> str:
        """The pub/sub channel of wake-up signals (see ``svc.pubsub.wakeups``)."""
        return f"{self.ns}:signals"

    @property
    def endpoint_changes(self) -> str:
        """The pub/sub channel on which endpoint changes are announced, ``[org, env]``."""
        return f"{self.ns}:endpoint-changes"

    @property
    def api_key_changes(self) -> str:
        """The pub/sub channel on which rolled and revoked API keys are announced, ``key_id``."""
        return f"{self.ns}:api-key-changes"

    def api_key_rate(self, key_id: str) -> str:
        """An API key's rate-limit state: the theoretical arrival time of its next request."""
        return f"{self.ns}:keyrate:{key_id}"

    def failed_auth(self, address: str) -> str:
        """Requests with an unknown API key from one client address in the current window."""
        return f"{self.ns}:authfail:{address}"

    def dashboard_session(self, digest: str) -> str:
        """A dashboard session, under the digest of its id (the id itself is never stored)."""
        return f"{self.ns}:dash:{digest}"

    def rate(self, endpoint_id: str, second: int) -> str:
        """Deliveries to an endpoint in one second of Unix time (its rate limit's counter)."""
        return f"{self.ns}:rate:{endpoint_id}:{second}"

    @property
    def endpoint_pauses(self) -> str:
        """The pub/sub channel on which a receiver's Retry-After pause is announced."""
        return f"{self.ns}:endpoint-pauses"

    def terminal_alive(self, terminal_id: str) -> str:
        return f"{self.ns}:trmalive:{terminal_id}"

    def simulator_lease(self, terminal_id: str) -> str:
        return f"{self.ns}:trmlease:{terminal_id}"
