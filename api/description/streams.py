"""The messages of a payment's WebSocket, in the OpenAPI description."""

from __future__ import annotations

from api.description.shapes import message
from api.openapi import Json, id_of, ref
from svc.terminal.protocol import STEPS

STEP: Json = {"type": "string", "enum": list(STEPS)}


def schemas() -> Json:
    return {
        "StreamPaymentMessage": message(
            "payment",
            {"payment": ref("Payment")},
            "The payment: first as it is, then on every change.",
        ),
        "StreamProgressMessage": message(
            "progress",
            {
                "payment_id": id_of("pay", "payment"),
                "seq": {"type": "integer", "minimum": 1},
                "step": STEP,
            },
            "A terminal step, numbered from 1; earlier steps are sent first on open.",
        ),
        "StreamMessage": {
            "oneOf": [ref("StreamPaymentMessage"), ref("StreamProgressMessage")],
            "description": "A text message of GET /v1/payments/{payment_id}/stream.",
        },
    }
