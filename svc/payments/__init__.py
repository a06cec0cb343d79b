"""Payments: the record and its state machine, storage, and the use cases that move it."""

from svc.payments.model import CHANNELS, CURRENCIES, FINAL, STATUSES, Payment, allowed

__all__ = ["CHANNELS", "CURRENCIES", "FINAL", "STATUSES", "Payment", "allowed"]
