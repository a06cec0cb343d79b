"""The API key object and its forms, in the OpenAPI description."""

from __future__ import annotations

from api.description.shapes import list_of
from api.openapi import (
    ENVIRONMENT,
    TIMESTAMP,
    Json,
    id_of,
    obj,
)
from svc.keys.model import MAX_EXPIRE_PREVIOUS, MAX_NAME, PERMISSIONS

_OPTIONAL_TIME: Json = {**TIMESTAMP, "type": ["string", "null"]}
_PERMISSIONS: Json = {
    "type": ["array", "null"],
    "items": {"type": "string", "enum": list(PERMISSIONS)},
    "description": (
        "resource:read or resource:write items (write implies read); null: full access."
    ),
}


def schemas() -> Json:
    key = {
        "id": id_of("key", "API key"),
        "object": {"const": "api_key"},
        "name": {"type": "string", "maxLength": MAX_NAME},
        "environment": ENVIRONMENT,
        "prefix": {
            "type": "string",
            "description": "The readable start of the secret, to tell keys apart.",
        },
        "permissions": _PERMISSIONS,
        "created_at": TIMESTAMP,
        "expires_at": _OPTIONAL_TIME,
        "last_used_at": {**_OPTIONAL_TIME, "description": "To the minute."},
        "revoked_at": _OPTIONAL_TIME,
    }
    secret: Json = {
        "type": "string",
        "pattern": "^svc_(test|live)_",
        "description": "The key itself: shown in this answer only.",
    }
    return {
        "ApiKey": obj(key, description="An API key of the caller's scope; never its secret."),
        "ApiKeyWithSecret": obj(
            {**key, "secret": secret},
            description="A key just made or rolled, with its secret (shown this once).",
        ),
        "ApiKeyCreate": obj(
            {
                "name": {"type": "string", "maxLength": MAX_NAME, "default": ""},
                "permissions": _PERMISSIONS,
                "expires_at": {
                    **_OPTIONAL_TIME,
                    "description": "When the key stops working (ISO 8601 with an offset, in "
                    "the future); null: never.",
                },
            },
            required=[],
            description="A new key of the caller's organisation and environment.",
            examples=[{"name": "till 3", "permissions": ["payments:write", "terminals:write"]}],
        ),
        "ApiKeyRoll": obj(
            {
                "expire_previous_in": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": MAX_EXPIRE_PREVIOUS,
                    "default": 0,
                    "description": "Seconds the old secret keeps working (0: it stops now).",
                }
            },
            required=[],
            examples=[{"expire_previous_in": 3600}],
        ),
        "ApiKeyList": list_of("ApiKey", "API keys, revoked ones included, newest first."),
    }
