"""The payment record, its states and allowed transitions, and its API and event views."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from svc.envelope import iso_ms

STATUSES: tuple[str, ...] = ("pending", "authorized", "succeeded", "failed", "canceled")
FINAL: frozenset[str] = frozenset({"succeeded", "failed", "canceled"})
CHANNELS: tuple[str, ...] = ("online", "phone", "terminal")
CURRENCIES: tuple[str, ...] = ("CHF",)

# pending → authorized → succeeded; pending|authorized → failed; pending|authorized → canceled.
TRANSITIONS: dict[str, frozenset[str]] = {
    "pending": frozenset({"authorized", "failed", "canceled"}),
    "authorized": frozenset({"succeeded", "failed", "canceled"}),
}


def allowed(current: str, target: str) -> bool:
    """True when a payment in ``current`` may enter ``target``."""
    return target in TRANSITIONS.get(current, frozenset())


@dataclass(frozen=True, slots=True)
class Payment:
    """A stored payment; amounts and tips are integers in Rappen."""

    id: str
    org: str
    env: str
    status: str
    amount: int
    currency: str
    channel: str
    created_ms: int
    updated_ms: int
    success_url: str | None = None
    checkout_token: str | None = None
    terminal_id: str | None = None
    tip_prompt: bool = False
    tip: int = 0
    failure_code: str | None = None
    cancel_reason: str | None = None
    expires_ms: int | None = None
    fee: int | None = None
    """Rappen charged when the payment succeeded (``svc.money.flow.charges``); None before."""

    @property
    def final(self) -> bool:
        return self.status in FINAL

    def moved(self, status: str, now_ms: int, **changes: Any) -> Payment:
        """This payment in ``status``; the caller checked ``allowed`` first."""
        return replace(self, status=status, updated_ms=now_ms, **changes)

    def public(self, checkout_base_url: str) -> dict[str, Any]:
        """The API view: every key always present (null when it does not apply)."""
        checkout_url = None
        if self.checkout_token is not None:
            checkout_url = f"{checkout_base_url.rstrip('/')}/{self.id}/{self.checkout_token}"
        return {
            "id": self.id,
            "object": "payment",
            "status": self.status,
            "amount": self.amount,
            "tip": self.tip,
            "total_amount": self.amount + self.tip,
            "currency": self.currency,
            "channel": self.channel,
            "environment": self.env,
            "checkout_url": checkout_url,
            "success_url": self.success_url,
            "terminal_id": self.terminal_id,
            "tip_prompt": self.tip_prompt,
            "failure_code": self.failure_code,
            "cancel_reason": self.cancel_reason,
            "fee": self.fee,
            "created_at": iso_ms(self.created_ms),
            "updated_at": iso_ms(self.updated_ms),
            "expires_at": None if self.expires_ms is None else iso_ms(self.expires_ms),
        }

    def event_data(self) -> dict[str, Any]:
        """The ``data`` of a ``payment.*`` event: id, status, amount and what explains them."""
        data: dict[str, Any] = {
            "id": self.id,
            "object": "payment",
            "status": self.status,
            "amount": self.amount,
            "currency": self.currency,
            "channel": self.channel,
        }
        if self.tip:
            data["tip"] = self.tip
            data["total_amount"] = self.amount + self.tip
        if self.terminal_id is not None:
            data["terminal_id"] = self.terminal_id
        if self.failure_code is not None:
            data["failure_code"] = self.failure_code
        if self.cancel_reason is not None:
            data["cancel_reason"] = self.cancel_reason
        if self.fee is not None:
            data["fee"] = self.fee
        return data
