"""The refund object and the form of a new refund, in the OpenAPI description."""

from __future__ import annotations

from api.description.shapes import list_of
from api.input.payments import MAX_AMOUNT
from api.openapi import (
    AMOUNT,
    ENVIRONMENT,
    TIMESTAMP,
    Json,
    id_of,
    obj,
)
from svc.money.model.records import REFUND_STATUSES
from svc.payments import CURRENCIES


def schemas() -> Json:
    return {
        "Refund": obj(
            {
                "id": id_of("re", "refund"),
                "object": {"const": "refund"},
                "payment_id": id_of("pay", "payment"),
                "amount": AMOUNT,
                "currency": {"type": "string", "enum": list(CURRENCIES)},
                "status": {
                    "type": "string",
                    "enum": list(REFUND_STATUSES),
                    "description": "pending, then succeeded or failed (refund.* events).",
                },
                "failure_code": {
                    "type": ["string", "null"],
                    "description": (
                        "Why a failed refund failed: insufficient_funds (the balance does not "
                        "cover it) or declined (sandbox: an amount ending in 05)."
                    ),
                },
                "balance_transaction_id": {
                    "type": ["string", "null"],
                    "description": "The debit of a succeeded refund (txn_...).",
                },
                "environment": ENVIRONMENT,
                "created_at": TIMESTAMP,
                "updated_at": TIMESTAMP,
            },
            description="A refund of a succeeded payment; every key always present.",
        ),
        "RefundCreate": obj(
            {
                "amount": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_AMOUNT,
                    "description": (
                        "Rappen to refund; default all that is left (captured amount less "
                        "refunds and chargeback). More is a 422 exceeds_refundable."
                    ),
                }
            },
            required=[],
            description="Form fields of a refund, each sent once; the body may be empty.",
            examples=[{"amount": 1000}],
        ),
        "RefundList": list_of("Refund", "Refunds, newest first."),
    }
