"""Description of the API key routes (api/routes/api_keys.py) and the API key object."""

from __future__ import annotations

from api.description.shapes import list_of
from api.openapi import (
    ENVIRONMENT,
    OPAQUE_CURSOR,
    TIMESTAMP,
    Json,
    created,
    id_of,
    json_content,
    obj,
    ok,
    page_query,
    path_id,
    problem,
    ref,
    v1,
    v1_post,
)
from svc.orgs.keys import MAX_EXPIRE_PREVIOUS, MAX_NAME
from svc.orgs.permissions import PERMISSIONS

TAG = "API keys"

_OPTIONAL_TIME: Json = {**TIMESTAMP, "type": ["string", "null"]}
_PERMISSIONS: Json = {
    "type": ["array", "null"],
    "items": {"type": "string", "enum": list(PERMISSIONS)},
    "description": (
        "resource:read or resource:write items (write implies read); null: full access."
    ),
}
_DENIED = problem(
    "permission_denied: the caller's key lacks api_keys:write, or makes, rolls or revokes a "
    "key with more permissions than its own; permission names what it lacks."
)


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


def paths() -> Json:
    key_id = path_id("key_id", "key", "API key")
    return {
        "/v1/api_keys": {
            "post": v1_post(
                {
                    "operationId": "create_api_key",
                    "tags": [TAG],
                    "summary": "Make an API key",
                    "requestBody": {
                        "required": False,
                        "content": json_content(ref("ApiKeyCreate")),
                    },
                    "responses": {
                        **created(
                            "ApiKeyWithSecret",
                            "The key, with its secret.",
                            "/v1/api_keys/{id}.",
                        ),
                        "403": _DENIED,
                    },
                },
            ),
            "get": v1(
                {
                    "operationId": "list_api_keys",
                    "tags": [TAG],
                    "summary": "List API keys",
                    "parameters": page_query(OPAQUE_CURSOR),
                    "responses": ok("ApiKeyList", "A page of keys."),
                },
                "422",
            ),
        },
        "/v1/api_keys/{key_id}": {
            "parameters": [key_id],
            "get": v1(
                {
                    "operationId": "read_api_key",
                    "tags": [TAG],
                    "summary": "Read an API key",
                    "responses": ok("ApiKey", "The key."),
                },
            ),
            "delete": v1(
                {
                    "operationId": "revoke_api_key",
                    "tags": [TAG],
                    "summary": "Revoke an API key",
                    "description": "It stops working on every API process within a second; "
                    "a key may revoke itself (this answer still goes out).",
                    "responses": {**ok("ApiKey", "Revoked: revoked_at is set."), "403": _DENIED},
                },
            ),
        },
        "/v1/api_keys/{key_id}/roll": {
            "parameters": [key_id],
            "post": v1_post(
                {
                    "operationId": "roll_api_key",
                    "tags": [TAG],
                    "summary": "Give an API key a new secret",
                    "description": "The old secret keeps working expire_previous_in seconds. "
                    "A revoked key is 409 api_key_revoked.",
                    "requestBody": {
                        "required": False,
                        "content": json_content(ref("ApiKeyRoll")),
                    },
                    "responses": {
                        **ok("ApiKeyWithSecret", "The key with its new secret."),
                        "403": _DENIED,
                    },
                },
            ),
        },
    }
