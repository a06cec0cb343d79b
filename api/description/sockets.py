"""Description of the WebSocket routes: a payment's stream (api/routes/streams.py) and the terminal
device connection (api/routes/terminal_ws.py), with the schemas of their messages."""

from __future__ import annotations

from api.description.shapes import Json, id_of, obj, path_id, problem, problems, ref, v1
from svc.terminal.protocol import DEVICE_PATH, MAX_TIP, STEPS

TAG = "WebSockets"
SWITCHING: Json = {"101": {"description": "Switching Protocols: the WebSocket is open."}}
STEP: Json = {"type": "string", "enum": list(STEPS)}
REASON: Json = {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,63}$"}


def _message(kind: str, properties: Json, description: str) -> Json:
    return obj({"type": {"const": kind}, **properties}, description=description)


def schemas() -> Json:
    payment_id = id_of("pay", "payment")
    return {
        "StreamPaymentMessage": _message(
            "payment",
            {"payment": ref("Payment")},
            "The payment: first as it is, then on every change.",
        ),
        "StreamProgressMessage": _message(
            "progress",
            {"payment_id": payment_id, "seq": {"type": "integer", "minimum": 1}, "step": STEP},
            "A terminal step, numbered from 1; earlier steps are sent first on open.",
        ),
        "StreamMessage": {
            "oneOf": [ref("StreamPaymentMessage"), ref("StreamProgressMessage")],
            "description": "A text message of GET /v1/payments/{payment_id}/stream.",
        },
        "DeviceCommand": {
            "oneOf": [
                _message(
                    "welcome", {"terminal_id": id_of("trm", "terminal")}, "Sent once on open."
                ),
                _message(
                    "payment.start",
                    {
                        "payment_id": payment_id,
                        "amount": {"type": "integer"},
                        "currency": {"type": "string"},
                        "tip_prompt": {"type": "boolean"},
                    },
                    "Take this payment over.",
                ),
                _message("payment.cancel", {"payment_id": payment_id}, "Stop this payment."),
                _message(
                    "error",
                    {"code": {"type": "string"}, "detail": {"type": "string"}},
                    "A message of the terminal was refused.",
                ),
            ],
            "description": "A message from the service to a terminal.",
        },
        "DeviceReport": {
            "oneOf": [
                _message("progress", {"payment_id": payment_id, "step": STEP}, "A step began."),
                _message(
                    "authorized",
                    {
                        "payment_id": payment_id,
                        "tip": {"type": "integer", "minimum": 0, "maximum": MAX_TIP, "default": 0},
                    },
                    "Amount (and tip, Rappen) reserved.",
                ),
                _message("succeeded", {"payment_id": payment_id}, "Captured."),
                _message("failed", {"payment_id": payment_id, "reason": REASON}, "Declined."),
                _message("canceled", {"payment_id": payment_id, "reason": REASON}, "Aborted."),
            ],
            "description": "A message from a terminal to the service.",
        },
    }


def paths() -> Json:
    return {
        "/v1/payments/{payment_id}/stream": {
            "parameters": [path_id("payment_id", "pay", "payment")],
            "get": v1(
                {
                    "operationId": "stream_payment",
                    "tags": [TAG],
                    "summary": "WebSocket of one payment: progress steps and status changes",
                    "description": (
                        "Text messages are StreamMessage objects. The server closes the socket "
                        "(code 1000) after the message with a final status."
                    ),
                    "responses": SWITCHING,
                },
                "404",
                "426",
            ),
        },
        DEVICE_PATH: {
            "get": {
                "operationId": "connect_terminal",
                "tags": [TAG],
                "summary": "Device side of the terminal protocol (for terminals, not tills)",
                "description": (
                    "A terminal connects with its device secret; it is online while the socket "
                    "is open. The service sends DeviceCommand messages, the terminal answers "
                    "with DeviceReport messages."
                ),
                "security": [{"terminal": []}],
                "responses": {
                    **SWITCHING,
                    "401": problem(
                        "The device secret is missing or unknown (invalid_terminal_secret).",
                        headers={
                            "WWW-Authenticate": {"required": True, "schema": {"type": "string"}}
                        },
                    ),
                    **problems("426", "500"),
                },
            }
        },
    }
