"""The payment object and the forms of a new payment, in the OpenAPI description."""

from __future__ import annotations

from api.description.shapes import list_of
from api.description.webhooks import URL
from api.input.payments import MAX_AMOUNT
from api.openapi import (
    ENVIRONMENT,
    TIMESTAMP,
    Json,
    id_of,
    obj,
)
from api.routes.payments import ONLINE_CHANNELS
from svc.payments import CHANNELS, CURRENCIES, STATUSES

NULLABLE_TIME: Json = {**TIMESTAMP, "type": ["string", "null"]}
RAPPEN: Json = {
    "type": "integer",
    "minimum": 1,
    "maximum": MAX_AMOUNT,
    "description": (
        "Integer Rappen (2450 is CHF 24.50). Decimals are refused (not_integer), a whole number "
        "outside the range, negative ones too, is out_of_range; anything else invalid_integer."
    ),
    "examples": [2450],
}
CURRENCY: Json = {"type": "string", "enum": list(CURRENCIES), "default": "CHF"}


def schemas() -> Json:
    return {
        "PaymentList": list_of("Payment", "Payments, newest first."),
        "Payment": obj(
            {
                "id": id_of("pay", "payment"),
                "object": {"const": "payment"},
                "status": {
                    "type": "string",
                    "enum": list(STATUSES),
                    "description": "pending → authorized → succeeded; or failed; or canceled.",
                },
                "amount": {"type": "integer", "description": "Rappen, without the tip."},
                "tip": {"type": "integer", "minimum": 0, "description": "Rappen."},
                "total_amount": {"type": "integer", "description": "amount + tip, Rappen."},
                "currency": {"type": "string", "enum": list(CURRENCIES)},
                "channel": {"type": "string", "enum": list(CHANNELS)},
                "environment": ENVIRONMENT,
                "checkout_url": {
                    "type": ["string", "null"],
                    "format": "uri",
                    "description": "The checkout page (online and phone payments).",
                },
                "success_url": {"type": ["string", "null"], "format": "uri"},
                "terminal_id": {"type": ["string", "null"]},
                "tip_prompt": {"type": "boolean"},
                "failure_code": {
                    "type": ["string", "null"],
                    "description": "Why a failed payment failed, e.g. declined.",
                },
                "cancel_reason": {
                    "type": ["string", "null"],
                    "description": "Why a canceled payment was canceled, e.g. requested, expired.",
                },
                "fee": {
                    "type": ["integer", "null"],
                    "minimum": 0,
                    "description": (
                        "Rappen charged when the payment succeeded (percentage part rounded "
                        "half up, plus the fixed part, at most the captured amount); null "
                        "before."
                    ),
                },
                "created_at": TIMESTAMP,
                "updated_at": TIMESTAMP,
                "expires_at": {
                    **NULLABLE_TIME,
                    "description": "When a pending online payment becomes canceled.",
                },
            },
            description="A payment; every key is always present (null when it does not apply).",
        ),
        "PaymentCreate": obj(
            {
                "amount": RAPPEN,
                "currency": CURRENCY,
                "channel": {"type": "string", "enum": list(ONLINE_CHANNELS), "default": "online"},
                "success_url": {
                    **URL,
                    "description": (
                        "Where the checkout page returns the customer; any host, private "
                        "ones included (the customer's browser opens it)."
                    ),
                },
            },
            required=["amount", "success_url"],
            description="Form fields of an online or phone payment, each sent once.",
            examples=[
                {
                    "amount": 2450,
                    "currency": "CHF",
                    "channel": "online",
                    "success_url": "https://shop.example/orders/1042/paid",
                }
            ],
        ),
    }
