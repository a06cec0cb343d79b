"""Errors of the money use cases; the API maps each to one Problem code.

Tree::

    MoneyError (a ServiceError)   a money movement the rules refuse
    ├── UnknownPayment            no such payment in the caller's scope
    ├── NotSucceeded              only succeeded payments are refunded or charged back
    ├── ExceedsRefundable         a refund larger than what is left of the payment
    ├── AlreadyChargedBack        a payment has at most one chargeback
    ├── NothingToDispute          the payment was refunded in full
    └── InsufficientFunds         a payout larger than the available balance (or none at all)
"""

from __future__ import annotations

from svc.errors import ServiceError


class MoneyError(ServiceError):
    """Base of the money errors."""


class UnknownPayment(MoneyError):
    """The payment does not exist in the caller's scope."""


class NotSucceeded(MoneyError):
    """The payment is not ``succeeded``; ``status`` is what it is."""

    def __init__(self, status: str) -> None:
        super().__init__(f"the payment is {status}")
        self.status = status


class ExceedsRefundable(MoneyError):
    """The refund asks for more than ``remaining`` Rappen."""

    def __init__(self, remaining: int) -> None:
        super().__init__(f"at most {remaining} can be refunded")
        self.remaining = remaining


class AlreadyChargedBack(MoneyError):
    """The payment already has its chargeback."""


class NothingToDispute(MoneyError):
    """Nothing of the payment is left to charge back: it was refunded in full."""


class InsufficientFunds(MoneyError):
    """The payout asks for more than ``available`` Rappen (or nothing is available)."""

    def __init__(self, available: int) -> None:
        super().__init__(f"{available} available")
        self.available = available
