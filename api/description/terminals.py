"""The terminal object and the form of a terminal payment, in the OpenAPI description."""

from __future__ import annotations

from api.description.payments import CURRENCY, RAPPEN
from api.description.shapes import list_of
from api.openapi import (
    ENVIRONMENT,
    TIMESTAMP,
    Json,
    id_of,
    obj,
)


def schemas() -> Json:
    return {
        "Terminal": obj(
            {
                "id": id_of("trm", "terminal"),
                "object": {"const": "terminal"},
                "name": {"type": "string"},
                "status": {
                    "type": "string",
                    "enum": ["online", "offline"],
                    "description": "online while the device holds its connection.",
                },
                "simulated": {
                    "type": "boolean",
                    "description": "true for the sandbox simulation terminal.",
                },
                "environment": ENVIRONMENT,
                "current_payment_id": {
                    "type": ["string", "null"],
                    "description": "The open payment the terminal works on, if any.",
                },
                "created_at": TIMESTAMP,
                "status_changed_at": TIMESTAMP,
            },
            description="A card terminal of the organisation.",
        ),
        "TerminalList": list_of(
            "Terminal", "Every terminal of the scope, oldest first (a single page)."
        ),
        "TerminalPaymentCreate": obj(
            {
                "amount": RAPPEN,
                "currency": CURRENCY,
                "tip_prompt": {
                    "type": "boolean",
                    "default": False,
                    "description": "Ask the customer for a tip on the terminal.",
                },
            },
            required=["amount"],
            description="Form fields of a terminal payment, each sent once.",
            examples=[{"amount": 2450, "tip_prompt": True}],
        ),
    }
