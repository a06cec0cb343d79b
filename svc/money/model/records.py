"""Money records and their API and event views: balance transactions, refunds, chargebacks and
payouts. Amounts are integer Rappen."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from svc.envelope import iso_ms

REFUND_STATUSES: tuple[str, ...] = ("pending", "succeeded", "failed")
CHARGEBACK_REASONS: tuple[str, ...] = (
    "fraudulent",
    "duplicate",
    "product_not_received",
    "product_unacceptable",
    "credit_not_processed",
    "unrecognized",
    "general",
)
CHARGEBACK_STATUS = "debited"
"""A chargeback is debited from the balance when it arrives; there is no dispute process."""
PAYOUT_STATUS = "paid"

TYPES: dict[str, tuple[str, int]] = {
    "payment": ("card_network", +1),
    "fee": ("fees", -1),
    "partner_commission": ("fees", +1),
    "refund": ("card_network", -1),
    "fee_refund": ("fees", +1),
    "partner_commission_reversal": ("fees", -1),
    "chargeback": ("card_network", -1),
    "chargeback_fee": ("fees", -1),
    "payout": ("bank", -1),
}
"""Each type's counter account and the sign of its effect on the organisation's balance."""


_ENVELOPE = frozenset({"environment", "created_at", "updated_at"})
"""Fields of an object's API view that its event's envelope tells already."""


def event_data(public: dict[str, Any]) -> dict[str, Any]:
    """An event's ``data`` from an object's API view: without what the envelope tells and
    without empty fields."""
    return {k: v for k, v in public.items() if k not in _ENVELOPE and v is not None}


@dataclass(frozen=True, slots=True)
class BalanceTransaction:
    """One money movement of one organisation: ``amount`` is its effect on the balance."""

    id: str
    org: str
    env: str
    currency: str
    type: str
    amount: int
    source_id: str
    available_ms: int
    created_ms: int
    connected_org: str | None = None

    def public(self, now_ms: int) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "balance_transaction",
            "type": self.type,
            "amount": self.amount,
            "currency": self.currency,
            "status": "available" if self.available_ms <= now_ms else "pending",
            "source_id": self.source_id,
            "connected_organisation_id": self.connected_org,
            "environment": self.env,
            "available_on": iso_ms(self.available_ms),
            "created_at": iso_ms(self.created_ms),
        }


@dataclass(frozen=True, slots=True)
class Balance:
    """What an organisation has in one currency: ``available`` can be paid out."""

    currency: str
    available: int
    pending: int

    @property
    def total(self) -> int:
        return self.available + self.pending


@dataclass(frozen=True, slots=True)
class Refund:
    """Money given back on a succeeded payment: ``pending``, then ``succeeded`` or ``failed``."""

    id: str
    org: str
    env: str
    payment_id: str
    amount: int
    currency: str
    status: str
    created_ms: int
    updated_ms: int
    failure_code: str | None = None
    balance_transaction_id: str | None = None

    def settled(self, status: str, now_ms: int, **changes: Any) -> Refund:
        return replace(self, status=status, updated_ms=now_ms, **changes)

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "refund",
            "payment_id": self.payment_id,
            "amount": self.amount,
            "currency": self.currency,
            "status": self.status,
            "failure_code": self.failure_code,
            "balance_transaction_id": self.balance_transaction_id,
            "environment": self.env,
            "created_at": iso_ms(self.created_ms),
            "updated_at": iso_ms(self.updated_ms),
        }

    def event_data(self) -> dict[str, Any]:
        return event_data(self.public())


@dataclass(frozen=True, slots=True)
class Chargeback:
    """A payment disputed by the cardholder's bank: ``amount`` and ``fee`` are debited."""

    id: str
    org: str
    env: str
    payment_id: str
    amount: int
    fee: int
    currency: str
    reason: str
    status: str
    created_ms: int

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chargeback",
            "payment_id": self.payment_id,
            "amount": self.amount,
            "fee": self.fee,
            "currency": self.currency,
            "reason": self.reason,
            "status": self.status,
            "environment": self.env,
            "created_at": iso_ms(self.created_ms),
        }

    def event_data(self) -> dict[str, Any]:
        return event_data(self.public())


@dataclass(frozen=True, slots=True)
class Payout:
    """Available balance sent to the organisation's bank account."""

    id: str
    org: str
    env: str
    amount: int
    currency: str
    status: str
    automatic: bool
    arrival_date: str
    """ISO date (UTC) the money reaches the bank, e.g. 2026-11-22."""
    balance_transaction_id: str
    created_ms: int

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "payout",
            "amount": self.amount,
            "currency": self.currency,
            "status": self.status,
            "automatic": self.automatic,
            "arrival_date": self.arrival_date,
            "balance_transaction_id": self.balance_transaction_id,
            "environment": self.env,
            "created_at": iso_ms(self.created_ms),
        }

    def event_data(self) -> dict[str, Any]:
        return event_data(self.public())
