"""Description of the payout routes (api/routes/payouts.py), in the balance's section."""

from __future__ import annotations

from api.description import balance
from api.description.shapes import list_of
from api.input.payments import MAX_AMOUNT
from api.openapi import (
    AMOUNT,
    ENVIRONMENT,
    OPAQUE_CURSOR,
    TIMESTAMP,
    Json,
    created,
    form_body,
    id_of,
    obj,
    ok,
    page_query,
    path_id,
    v1,
    v1_post,
)
from svc.money.model import PAYOUT_STATUS

TAG = balance.TAG  # one section with the balance, as the generated client's module names it
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


def paths() -> Json:
    return {
        "/v1/payouts": {
            "post": v1_post(
                {
                    "operationId": "create_payout",
                    "tags": [TAG],
                    "summary": "Test environment: pay out the available balance now",
                    "requestBody": form_body("PayoutCreate"),
                    "responses": created(
                        "Payout",
                        "Paid; payout.paid is emitted. A live key gets 409 sandbox_only (live "
                        "balances follow the payout schedule); 422 insufficient_funds names "
                        "amount when less is available.",
                        "/v1/payouts/{id}.",
                    ),
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
