"""The balance and its movements, in the OpenAPI description."""

from __future__ import annotations

from api.description.shapes import list_of
from api.openapi import ENVIRONMENT, TIMESTAMP, Json, id_of, obj
from svc.money.model.records import TYPES
from svc.payments import CURRENCIES

CURRENCY: Json = {"type": "string", "enum": list(CURRENCIES)}


def _amounts(description: str) -> Json:
    item = obj(
        {
            "amount": {"type": "integer", "description": "Rappen; may be negative."},
            "currency": CURRENCY,
        }
    )
    return {"type": "array", "items": item, "description": description}


def schemas() -> Json:
    return {
        "Balance": obj(
            {
                "object": {"const": "balance"},
                "environment": ENVIRONMENT,
                "available": _amounts("Can be paid out, per currency."),
                "pending": _amounts(
                    "Payment funds (less fees) still within the settlement delay, per currency."
                ),
            },
            description="The sums of the organisation's balance transactions.",
        ),
        "BalanceTransaction": obj(
            {
                "id": id_of("txn", "balance transaction"),
                "object": {"const": "balance_transaction"},
                "type": {
                    "type": "string",
                    "enum": list(TYPES),
                    "description": (
                        "payment, fee and partner_commission credit or debit a payment's "
                        "funds; refund, chargeback, chargeback_fee and payout debit."
                    ),
                },
                "amount": {"type": "integer", "description": "Effect on the balance, Rappen."},
                "currency": CURRENCY,
                "status": {"type": "string", "enum": ["available", "pending"]},
                "source_id": {
                    "type": "string",
                    "description": "The payment, refund, chargeback or payout it books.",
                },
                "connected_organisation_id": {
                    "type": ["string", "null"],
                    "description": "partner_commission: the organisation whose fee it shares.",
                },
                "environment": ENVIRONMENT,
                "available_on": TIMESTAMP,
                "created_at": TIMESTAMP,
            },
            description="One ledger movement; its entries sum to zero.",
        ),
        "BalanceTransactionList": list_of("BalanceTransaction", "Movements, newest first."),
    }
