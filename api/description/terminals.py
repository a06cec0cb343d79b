"""Description of the terminal routes (api/routes/terminals.py) and the terminal object."""

from __future__ import annotations

from api.description.payments import CURRENCY, RAPPEN
from api.description.shapes import list_of
from api.openapi import (
    ENVIRONMENT,
    TIMESTAMP,
    Json,
    created_payment,
    id_of,
    obj,
    ok,
    path_id,
    ref,
    v1,
    v1_post,
)

TAG = "Terminals"
TERMINAL_ID = path_id("terminal_id", "trm", "terminal")


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


def paths() -> Json:
    created = created_payment("Started: the payment (channel terminal, status pending).")
    return {
        "/v1/terminals": {
            "get": v1(
                {
                    "operationId": "list_terminals",
                    "tags": [TAG],
                    "summary": "List terminals (a test key always sees its simulation terminal)",
                    "responses": ok("TerminalList", "The terminals."),
                },
            ),
        },
        "/v1/terminals/{terminal_id}": {
            "parameters": [TERMINAL_ID],
            "get": v1(
                {
                    "operationId": "read_terminal",
                    "tags": [TAG],
                    "summary": "Read a terminal with its online/offline state",
                    "responses": ok("Terminal", "The terminal."),
                },
                "404",
            ),
        },
        "/v1/terminals/{terminal_id}/payments": {
            "parameters": [TERMINAL_ID],
            "post": v1_post(
                {
                    "operationId": "create_terminal_payment",
                    "tags": [TAG],
                    "summary": "Start a payment on a terminal",
                    "description": (
                        "409 terminal_offline when the terminal is not connected, 409 "
                        "terminal_busy while it works on another payment. Follow the result "
                        "with GET /v1/payments/{id}?wait=N, the payment's WebSocket or webhooks."
                    ),
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/x-www-form-urlencoded": {
                                "schema": ref("TerminalPaymentCreate")
                            }
                        },
                    },
                    "responses": created,
                },
                "404",
                "415",
                key_required=True,
            ),
        },
    }
