"""Description of the balance and payout routes (api/routes/balance.py, api/routes/payouts.py)."""

from __future__ import annotations

from api.description.refunds import AMOUNT, FORM
from api.description.shapes import (
    ENVIRONMENT,
    OPAQUE_CURSOR,
    TIMESTAMP,
    Json,
    id_of,
    list_of,
    obj,
    ok,
    page_query,
    path_id,
    ref,
    v1,
    v1_post,
)
from api.input.payments import MAX_AMOUNT
from svc.money.ledger import TYPES
from svc.money.model import PAYOUT_STATUS
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
        ),
        "PayoutList": list_of("Payout", "Payouts, newest first."),
    }


def paths() -> Json:
    source: Json = {
        "name": "source_id",
        "in": "query",
        "required": False,
        "description": "Only the movements of this payment, refund, chargeback or payout.",
        "schema": {"type": "string", "pattern": "^(pay|re|cb|po)_[0-9a-v]{26}$"},
    }
    payout_created = ok(
        "Payout",
        "Paid; payout.paid is emitted. A live key gets 409 sandbox_only (live balances follow "
        "the payout schedule); 422 insufficient_funds names amount when less is available.",
        "201",
    )
    payout_created["201"]["headers"] = {
        "Location": {"description": "/v1/payouts/{id}.", "schema": {"type": "string"}}
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
        "/v1/payouts": {
            "post": v1_post(
                {
                    "operationId": "create_payout",
                    "tags": [TAG],
                    "summary": "Test environment: pay out the available balance now",
                    "requestBody": {
                        "required": False,
                        "content": {FORM: {"schema": ref("PayoutCreate")}},
                    },
                    "responses": payout_created,
                },
                "415",
                key_required=True,
            ),
            "get": v1(
                {
                    "operationId": "list_payouts",
                    "tags": [TAG],
                    "summary": "List payouts",
                    "parameters": page_query(OPAQUE_CURSOR),
                    "responses": ok("PayoutList", "A page of payouts."),
                },
                "422",
            ),
        },
        "/v1/payouts/{payout_id}": {
            "parameters": [path_id("payout_id", "po", "payout")],
            "get": v1(
                {
                    "operationId": "read_payout",
                    "tags": [TAG],
                    "summary": "Read a payout",
                    "responses": ok("Payout", "The payout."),
                },
            ),
        },
    }
