"""The payout object and the form of a payout, in the OpenAPI description."""

from __future__ import annotations

from api.description import balance
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
from svc.money.model.records import PAYOUT_STATUS

CURRENCY = balance.CURRENCY


def schemas() -> Json:
    return {
        "Payout": obj(
            {
                "id": id_of("po", "payout"),
                "object": {"const": "payout"},
                "amount": AMOUNT,
                "currency": CURRENCY,
                "status": {"const": PAYOUT_STATUS},
                "automatic": {
                    "type": "boolean",
                    "description": "true when made by the payout schedule.",
                },
                "arrival_date": {"type": "string", "format": "date"},
                "balance_transaction_id": id_of("txn", "balance transaction"),
                "environment": ENVIRONMENT,
                "created_at": TIMESTAMP,
            },
            description="Available balance sent to the organisation's bank account.",
        ),
        "PayoutCreate": obj(
            {
                "amount": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_AMOUNT,
                    "description": "Rappen; default all that is available.",
                },
                "currency": {**CURRENCY, "default": "CHF"},
            },
            required=[],
            description="Form fields of a payout, each sent once; the body may be empty.",
            examples=[{"amount": 10000, "currency": "CHF"}],
        ),
        "PayoutList": list_of("Payout", "Payouts, newest first."),
    }
