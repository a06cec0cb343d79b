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
