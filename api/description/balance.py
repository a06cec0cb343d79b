"""Description of the balance routes (api/routes/balance.py): the balance and its movements."""

from __future__ import annotations

from api.description.shapes import list_of
from api.openapi import ENVIRONMENT, OPAQUE_CURSOR, TIMESTAMP, Json, id_of, obj, ok, page_query, v1
from svc.money.ledger import TYPES
from svc.payments import CURRENCIES

TAG = "Balance and payouts"
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


def paths() -> Json:
    source: Json = {
        "name": "source_id",
        "in": "query",
        "required": False,
        "description": "Only the movements of this payment, refund, chargeback or payout.",
        "schema": {"type": "string", "pattern": "^(pay|re|cb|po)_[0-9a-v]{26}$"},
    }
    return {
        "/v1/balance": {
            "get": v1(
                {
                    "operationId": "read_balance",
                    "tags": [TAG],
                    "summary": "The balance: available and pending, per currency",
                    "responses": ok("Balance", "The balance."),
                },
            ),
        },
        "/v1/balance_transactions": {
            "get": v1(
                {
                    "operationId": "list_balance_transactions",
                    "tags": [TAG],
                    "summary": "List the ledger movements that make up the balance",
                    "parameters": [*page_query(OPAQUE_CURSOR), source],
                    "responses": ok("BalanceTransactionList", "A page of movements."),
                },
                "422",
            ),
        },
    }
