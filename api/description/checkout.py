"""The form of the checkout page's sandbox actions, in the OpenAPI description."""

from __future__ import annotations

from api.openapi import Json, obj
from api.routes.checkout import ACTIONS


def schemas() -> Json:
    return {
        "CheckoutAction": obj(
            {"action": {"type": "string", "enum": list(ACTIONS)}},
            description="What the customer does on a sandbox checkout page.",
            examples=[{"action": "pay"}],
        )
    }
