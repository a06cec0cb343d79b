"""Description of the checkout page (api/routes/checkout.py): HTML for the customer, no API key."""

from __future__ import annotations

from api.openapi import ID_TAIL, Json, obj, problem, problems
from api.routes.checkout import ACTIONS

TAG = "Checkout"
PARAMETERS: list[Json] = [
    {
        "name": "payment_id",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "pattern": f"^pay_{ID_TAIL}$"},
    },
    {
        "name": "token",
        "in": "path",
        "required": True,
        "description": "The secret part of checkout_url.",
        "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
    },
]


def schemas() -> Json:
    return {
        "CheckoutAction": obj(
            {"action": {"type": "string", "enum": list(ACTIONS)}},
            description="What the customer does on a sandbox checkout page.",
            examples=[{"action": "pay"}],
        )
    }


def paths(checkout_path: str) -> Json:
    not_found = problem("No such checkout link (checkout_not_found, route_not_found).")
    public: Json = {"tags": [TAG], "security": []}
    return {
        checkout_path + "/{payment_id}/{token}": {
            "parameters": PARAMETERS,
            "get": {
                **public,
                "operationId": "show_checkout",
                "summary": "The checkout page of an online or phone payment",
                "responses": {
                    "200": {
                        "description": "The page; sandbox payments have pay, decline, cancel.",
                        "content": {"text/html": {"schema": {"type": "string"}}},
                    },
                    "404": not_found,
                    **problems("500"),
                },
            },
            "post": {
                **public,
                "operationId": "act_on_checkout",
                "summary": "Sandbox only: pay, decline or cancel, then return to success_url",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/x-www-form-urlencoded": {
                            "schema": {"$ref": "#/components/schemas/CheckoutAction"}
                        }
                    },
                },
                "responses": {
                    "303": {
                        "description": "Done (or the payment was final already): go back.",
                        "headers": {
                            "Location": {
                                "required": True,
                                "description": "The payment's success_url.",
                                "schema": {"type": "string"},
                            }
                        },
                    },
                    "404": not_found,
                    "409": problem("A live payment has no sandbox actions (sandbox_only)."),
                    **problems("400", "413", "415", "422", "500"),
                },
            },
        }
    }
