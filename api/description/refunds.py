"""Description of the refund and chargeback routes (api/routes/refunds.py and
chargebacks.py)."""

from __future__ import annotations

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
from svc.money.model import CHARGEBACK_REASONS, CHARGEBACK_STATUS, REFUND_STATUSES
from svc.payments import CURRENCIES

TAG = "Refunds and chargebacks"
PAYMENT_ID = path_id("payment_id", "pay", "payment")
FORM = "application/x-www-form-urlencoded"
AMOUNT: Json = {"type": "integer", "description": "Rappen (2450 is CHF 24.50)."}


def _created(schema: str, description: str, location: str) -> Json:
    created = ok(schema, description, "201")
    created["201"]["headers"] = {
        "Location": {"description": location, "schema": {"type": "string"}}
    }
    return created


def _form_body(schema: str) -> Json:
    return {"required": False, "content": {FORM: {"schema": ref(schema)}}}


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
        ),
        "RefundList": list_of("Refund", "Refunds, newest first."),
        "Chargeback": obj(
            {
                "id": id_of("cb", "chargeback"),
                "object": {"const": "chargeback"},
                "payment_id": id_of("pay", "payment"),
                "amount": {**AMOUNT, "description": "Debited: what was left of the payment."},
                "fee": {"type": "integer", "description": "Chargeback fee debited, Rappen."},
                "currency": {"type": "string", "enum": list(CURRENCIES)},
                "reason": {"type": "string", "enum": list(CHARGEBACK_REASONS)},
                "status": {
                    "const": CHARGEBACK_STATUS,
                    "description": "Amount and fee are debited when the chargeback arrives.",
                },
                "environment": ENVIRONMENT,
                "created_at": TIMESTAMP,
            },
            description="A chargeback of a succeeded payment.",
        ),
        "ChargebackCreate": obj(
            {
                "reason": {
                    "type": "string",
                    "enum": list(CHARGEBACK_REASONS),
                    "default": "fraudulent",
                }
            },
            required=[],
            description="Form fields of a sandbox chargeback; the body may be empty.",
        ),
        "ChargebackList": list_of("Chargeback", "Chargebacks, newest first."),
    }


def _refund_paths() -> Json:
    return {
        "/v1/payments/{payment_id}/refunds": {
            "parameters": [PAYMENT_ID],
            "post": v1_post(
                {
                    "operationId": "create_refund",
                    "tags": [TAG],
                    "summary": "Refund all or part of a succeeded payment",
                    "requestBody": _form_body("RefundCreate"),
                    "responses": _created(
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


def paths() -> Json:
    return {
        **_refund_paths(),
        "/v1/sandbox/payments/{payment_id}/chargeback": {
            "parameters": [PAYMENT_ID],
            "post": v1_post(
                {
                    "operationId": "create_sandbox_chargeback",
                    "tags": [TAG],
                    "summary": "Test environment: raise a chargeback of a succeeded payment",
                    "requestBody": _form_body("ChargebackCreate"),
                    "responses": _created(
                        "Chargeback",
                        "Debited; chargeback.created is emitted. 409: a live key "
                        "(sandbox_only), a payment not succeeded (payment_not_succeeded), "
                        "charged back already (already_charged_back) or refunded in full "
                        "(payment_fully_refunded).",
                        "/v1/chargebacks/{id} of the new chargeback.",
                    ),
                },
                "415",
            ),
        },
        "/v1/chargebacks": {
            "get": v1(
                {
                    "operationId": "list_chargebacks",
                    "tags": [TAG],
                    "summary": "List chargebacks",
                    "parameters": page_query(OPAQUE_CURSOR),
                    "responses": ok("ChargebackList", "A page of chargebacks."),
                },
                "422",
            ),
        },
        "/v1/chargebacks/{chargeback_id}": {
            "parameters": [path_id("chargeback_id", "cb", "chargeback")],
            "get": v1(
                {
                    "operationId": "read_chargeback",
                    "tags": [TAG],
                    "summary": "Read a chargeback",
                    "responses": ok("Chargeback", "The chargeback."),
                },
            ),
        },
    }
