"""The chargeback object and the form of a sandbox chargeback, in the OpenAPI description."""

from __future__ import annotations

from api.description.shapes import list_of
from api.openapi import (
    AMOUNT,
    ENVIRONMENT,
    TIMESTAMP,
    Json,
    id_of,
    obj,
)
from svc.money.model.records import CHARGEBACK_REASONS, CHARGEBACK_STATUS
from svc.payments import CURRENCIES


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
