"""Notification settings, in the OpenAPI description."""

from __future__ import annotations

from api.openapi import Json, obj
from svc.notices.model import MAX_EMAIL_LENGTH, MAX_EMAILS

_EMAILS: Json = {
    "type": "array",
    "maxItems": MAX_EMAILS,
    "uniqueItems": True,
    "items": {
        "type": "string",
        "format": "email",
        "maxLength": MAX_EMAIL_LENGTH,
        "examples": ["ops@shop.example"],
    },
    "description": (
        "Where notices about this environment's endpoints are mailed: one failing, disabled "
        "or exhausted notice per endpoint and kind until it succeeds again. Empty: none."
    ),
}


def schemas() -> Json:
    return {
        "NotificationSettingsUpdate": obj(
            {"emails": _EMAILS},
            description="The organisation's notification addresses for this environment.",
            examples=[{"emails": ["ops@shop.example"]}],
        ),
        "NotificationSettings": obj(
            {
                "object": {"const": "notification_settings"},
                "environment": {"type": "string", "enum": ["test", "live"]},
                "emails": _EMAILS,
                "email_enabled": {
                    "type": "boolean",
                    "description": "Whether this service mails notices (SVC_SMTP_HOST is set).",
                },
            },
            description="The organisation's notification addresses for this environment.",
        ),
    }
