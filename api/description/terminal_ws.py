"""The messages of the terminal protocol (the device connection's WebSocket), in the OpenAPI
description."""

from __future__ import annotations

from api.description import streams
from api.description.shapes import message
from api.openapi import Json, id_of
from svc.terminal.protocol import MAX_TIP

STEP = streams.STEP
REASON: Json = {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,63}$"}


def schemas() -> Json:
    payment_id = id_of("pay", "payment")
    return {
        "DeviceCommand": {
            "oneOf": [
                message("welcome", {"terminal_id": id_of("trm", "terminal")}, "Sent once on open."),
                message(
                    "payment.start",
                    {
                        "payment_id": payment_id,
                        "amount": {"type": "integer"},
                        "currency": {"type": "string"},
                        "tip_prompt": {"type": "boolean"},
                    },
                    "Take this payment over.",
                ),
                message("payment.cancel", {"payment_id": payment_id}, "Stop this payment."),
                message(
                    "error",
                    {"code": {"type": "string"}, "detail": {"type": "string"}},
                    "A message of the terminal was refused.",
                ),
            ],
            "description": "A message from the service to a terminal.",
        },
        "DeviceReport": {
            "oneOf": [
                message(
                    "progress", {"payment_id": payment_id, "step": streams.STEP}, "A step began."
                ),
                message(
                    "authorized",
                    {
                        "payment_id": payment_id,
                        "tip": {"type": "integer", "minimum": 0, "maximum": MAX_TIP, "default": 0},
                    },
                    "Amount (and tip, Rappen) reserved.",
                ),
                message("succeeded", {"payment_id": payment_id}, "Captured."),
                message("failed", {"payment_id": payment_id, "reason": REASON}, "Declined."),
                message("canceled", {"payment_id": payment_id, "reason": REASON}, "Aborted."),
            ],
            "description": "A message from a terminal to the service.",
        },
    }
