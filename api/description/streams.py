"""Description of a payment's WebSocket (api/routes/streams.py) and the messages it sends."""

from __future__ import annotations

from api.description.shapes import message
from api.openapi import SWITCHING, Json, id_of, path_id, ref, v1
from svc.terminal.protocol import STEPS

TAG = "WebSockets"
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
                        "(code 1000) after the message with a final status. One API key holds "
                        "at most SVC_MAX_STREAMS_PER_KEY streams open on one API process; one "
                        "more is 429 too_many_streams."
                    ),
                    "responses": SWITCHING,
                },
                "404",
                "426",
            ),
        },
    }
