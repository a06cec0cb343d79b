"""The headers of a delivery: its signatures (one per valid secret) in the endpoint's scheme.

``svc`` (the default) sends ``Svc-Signature: t=<unix>,v1=<new>[,v1=<previous>]``;
``standard-webhooks`` sends ``webhook-id``, ``webhook-timestamp`` and ``webhook-signature:
v1,<new>[ v1,<previous>]``. A previous secret signs until its expiry, so receivers can
switch secrets without a gap. An endpoint's custom headers come first; none of them can
replace the delivery's own (the API refuses those names).
"""

from __future__ import annotations

from dispatcher.delivery import Delivery
from svc import __version__
from svc.signing import SIGNATURE_HEADER, Signer, StandardSigner

USER_AGENT = f"svc-webhooks/{__version__}"


class Signing:
    """Signs for one endpoint: its current secret and, until ``previous_until_ms``, the one
    before it."""

    __slots__ = ("_custom", "_previous_until", "_standard", "_svc")

    def __init__(
        self,
        scheme: str,
        secret: str,
        previous: str | None = None,
        previous_until_ms: int | None = None,
        custom: dict[str, str] | None = None,
    ) -> None:
        self._custom = custom or None
        secrets = (secret,) if previous is None or previous_until_ms is None else (secret, previous)
        standard = scheme == "standard-webhooks"
        self._svc = () if standard else tuple(Signer(s) for s in secrets)
        self._standard = tuple(StandardSigner(s) for s in secrets) if standard else ()
        self._previous_until = (previous_until_ms or 0) / 1000

    def headers(self, job: Delivery, now: float) -> dict[str, str]:
        """Every header of one attempt of ``job`` sent at ``now`` (Unix seconds), the
        endpoint's custom ones included."""
        own = self._own(job, now)
        return own if self._custom is None else {**self._custom, **own}

    def _own(self, job: Delivery, now: float) -> dict[str, str]:
        timestamp = int(now)
        count = 2 if now < self._previous_until else 1
        if self._standard:
            return {
                "Content-Type": "application/json",
                "User-Agent": USER_AGENT,
                "webhook-id": job.event_id,
                "webhook-timestamp": str(timestamp),
                "webhook-signature": " ".join(
                    s.signature(job.event_id, job.body, timestamp) for s in self._standard[:count]
                ),
                "Svc-Event-Type": job.event_type,
                "Svc-Attempt": str(job.attempt),
            }
        if count == 1 or len(self._svc) == 1:
            signature = self._svc[0].header(job.body, timestamp)
        else:
            digests = ",".join("v1=" + s.digest(job.body, timestamp) for s in self._svc)
            signature = f"t={timestamp},{digests}"
        return {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            SIGNATURE_HEADER: signature,
            "Svc-Event-Id": job.event_id,
            "Svc-Event-Type": job.event_type,
            "Svc-Attempt": str(job.attempt),
        }
