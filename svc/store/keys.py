"""Redis key names; every key starts with the namespace so namespaces never see each other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Keys:
    """Key builder for one namespace."""

    ns: str

    def api_key(self, digest: str) -> str:
        return f"{self.ns}:apikey:{digest}"

    def org_name(self, name: str) -> str:
        return f"{self.ns}:orgname:{name}"

    def endpoint(self, endpoint_id: str) -> str:
        return f"{self.ns}:ep:{endpoint_id}"

    def endpoints(self, org: str, env: str) -> str:
        return f"{self.ns}:eps:{org}:{env}"

    def subscribers(self, org: str, env: str, event_type: str) -> str:
        return f"{self.ns}:subs:{org}:{env}:{event_type}"

    def event(self, event_id: str) -> str:
        return f"{self.ns}:evt:{event_id}"

    def event_status(self, event_id: str) -> str:
        return f"{self.ns}:evst:{event_id}"

    def event_log(self, event_id: str) -> str:
        return f"{self.ns}:evlog:{event_id}"

    def endpoint_log(self, endpoint_id: str) -> str:
        return f"{self.ns}:eplog:{endpoint_id}"

    @property
    def outbox(self) -> str:
        return f"{self.ns}:outbox"

    @property
    def signals(self) -> str:
        """The pub/sub channel of wake-up signals (see ``svc.signals``)."""
        return f"{self.ns}:signals"

    def payment(self, payment_id: str) -> str:
        return f"{self.ns}:pay:{payment_id}"

    def payment_steps(self, payment_id: str) -> str:
        return f"{self.ns}:paysteps:{payment_id}"

    @property
    def payment_deadlines(self) -> str:
        return f"{self.ns}:paydeadlines"

    def terminal(self, terminal_id: str) -> str:
        return f"{self.ns}:trm:{terminal_id}"

    def terminals(self, org: str, env: str) -> str:
        return f"{self.ns}:trms:{org}:{env}"

    def terminal_secret(self, digest: str) -> str:
        return f"{self.ns}:trmsecret:{digest}"

    def simulated_terminal(self, org: str) -> str:
        return f"{self.ns}:trmsim:{org}"

    @property
    def simulated_terminals(self) -> str:
        return f"{self.ns}:trmsims"

    def terminal_alive(self, terminal_id: str) -> str:
        return f"{self.ns}:trmalive:{terminal_id}"

    @property
    def online_terminals(self) -> str:
        return f"{self.ns}:trmsonline"

    def simulator_lease(self, terminal_id: str) -> str:
        return f"{self.ns}:trmlease:{terminal_id}"

    def idempotency(self, org: str, env: str, digest: str) -> str:
        return f"{self.ns}:idem:{org}:{env}:{digest}"
