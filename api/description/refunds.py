"""Description of the refund routes (api/routes/refunds.py) and the refund object."""

from __future__ import annotations

from api.description.shapes import list_of
from api.input.payments import MAX_AMOUNT
from api.openapi import (
    AMOUNT,
    ENVIRONMENT,
    ID_TAIL,
    OPAQUE_CURSOR,
    TIMESTAMP,
    Json,
    created,
    created_query,
    form_body,
    id_of,
    obj,
    ok,
    page_query,
    path_id,
    v1,
    v1_post,
)
from svc.money.model import REFUND_STATUSES
from svc.payments import CURRENCIES

TAG = "Refunds and chargebacks"
PAYMENT_ID = path_id("payment_id", "pay", "payment")


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


def paths() -> Json:
    filters: list[Json] = [
        {
            "name": "payment_id",
            "in": "query",
            "required": False,
            "description": "Only the refunds of this payment.",
            "schema": {"type": "string", "pattern": f"^pay_{ID_TAIL}$"},
        },
        {
            "name": "status",
            "in": "query",
            "required": False,
            "description": "Only refunds with this status.",
            "schema": {"type": "string", "enum": list(REFUND_STATUSES)},
        },
        *created_query(),
    ]
    return {
        "/v1/payments/{payment_id}/refunds": {
            "parameters": [PAYMENT_ID],
            "post": v1_post(
                {
                    "operationId": "create_refund",
                    "tags": [TAG],
                    "summary": "Refund all or part of a succeeded payment",
                    "requestBody": form_body("RefundCreate"),
                    "responses": created(
                        "Refund",
                        "Created pending; settled right after (refund.succeeded or "
                        "refund.failed). 409 payment_not_succeeded: only succeeded payments "
                        "are refunded.",
                        "/v1/refunds/{id} of the new refund.",
                    ),
                },
                "415",
                key_required=True,
            ),
            "get": v1(
                {
                    "operationId": "list_payment_refunds",
                    "tags": [TAG],
                    "summary": "List a payment's refunds",
                    "parameters": page_query(OPAQUE_CURSOR),
                    "responses": ok("RefundList", "A page of refunds."),
                },
                "422",
            ),
        },
        "/v1/refunds": {
            "get": v1(
                {
                    "operationId": "list_refunds",
                    "tags": [TAG],
                    "summary": "List the refunds of the key's scope, newest first",
                    "parameters": [*page_query(OPAQUE_CURSOR), *filters],
                    "responses": ok("RefundList", "A page of refunds."),
                },
                "422",
            ),
        },
        "/v1/refunds/{refund_id}": {
            "parameters": [path_id("refund_id", "re", "refund")],
            "get": v1(
                {
                    "operationId": "read_refund",
                    "tags": [TAG],
                    "summary": "Read a refund",
                    "responses": ok("Refund", "The refund."),
                },
            ),
        },
    }
