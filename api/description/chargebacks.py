"""Description of the chargeback routes (api/routes/chargebacks.py), in the refunds' section."""

from __future__ import annotations

from api.description import refunds
from api.description.shapes import list_of
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
from svc.money.model import CHARGEBACK_REASONS, CHARGEBACK_STATUS
from svc.payments import CURRENCIES

TAG = refunds.TAG  # one section with the refunds, as the generated client's module names it


def schemas() -> Json:
    return {
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
            examples=[{"reason": "product_not_received"}],
        ),
        "ChargebackList": list_of("Chargeback", "Chargebacks, newest first."),
    }


def paths() -> Json:
    return {
        "/v1/sandbox/payments/{payment_id}/chargeback": {
            "parameters": [refunds.PAYMENT_ID],
            "post": v1_post(
                {
                    "operationId": "create_sandbox_chargeback",
                    "tags": [TAG],
                    "summary": "Test environment: raise a chargeback of a succeeded payment",
                    "requestBody": form_body("ChargebackCreate"),
                    "responses": created(
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
