"""The webhook endpoint's settings and the forms of its operations (change, secret rotation,
recover), in the OpenAPI description; ``api.description.webhooks`` includes them."""

from __future__ import annotations

from api.input.endpoints import MAX_EXPIRE_PREVIOUS
from api.openapi import TIMESTAMP, Json, id_of, obj
from svc.webhooks.filters import MAX_NODES
from svc.webhooks.flow import DEFAULT_EXPIRE_PREVIOUS, RECOVER_LIMIT
from svc.webhooks.model import (
    DISABLED_FAILING,
    DISABLED_MANUALLY,
    MAX_HEADER_NAME,
    MAX_HEADER_VALUE,
    MAX_HEADERS,
    MAX_RATE_LIMIT,
    SCHEMES,
)

SIGNATURE_SCHEME: Json = {
    "type": "string",
    "enum": list(SCHEMES),
    "description": (
        "svc: the Svc-Signature header. standard-webhooks: webhook-id, webhook-timestamp and "
        "webhook-signature as the Standard Webhooks specification says."
    ),
}
RATE_LIMIT: Json = {
    "type": ["integer", "null"],
    "minimum": 1,
    "maximum": MAX_RATE_LIMIT,
    "description": "Most deliveries per second to this endpoint, across the service; null: none.",
}
ORDERED: Json = {
    "type": "boolean",
    "description": (
        "Events reach the endpoint one at a time in creation order; a failing event holds "
        "later ones until it succeeds or is exhausted."
    ),
}
DISABLED: Json = {
    "type": "boolean",
    "description": (
        "A disabled endpoint gets no deliveries; its events are still stored, and a recover "
        "sends them once it is enabled again. false turns it on and clears disabled_reason."
    ),
}

HEADERS: Json = {
    "type": ["object", "null"],
    "maxProperties": MAX_HEADERS,
    "propertyNames": {"maxLength": MAX_HEADER_NAME, "pattern": "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"},
    "additionalProperties": {"type": "string", "maxLength": MAX_HEADER_VALUE},
    "description": (
        "Headers added to every delivery, name to value, stored encrypted; null or {} for "
        "none. Refused (reserved_header): Host, Content-Length, Content-Type, "
        "Transfer-Encoding, Connection and the other hop-by-hop headers, User-Agent, and any "
        "Svc-* or webhook-* header."
    ),
    "examples": [{"Authorization": "Bearer rcv_4f9d2c", "X-Tenant": "bakery"}],
}
FILTER: Json = {
    "type": ["object", "null"],
    "description": (
        "A condition on the event's envelope; only events that meet it are sent, the others "
        "are not attempted (and not failures). Dotted paths (data.amount) map to a value "
        "(equality) or to operators $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $exists; "
        f"$and and $or take lists of conditions; at most {MAX_NODES} parts. null: every "
        "event of the subscribed types. A bad part is 422 invalid_filter naming it."
    ),
    "examples": [
        {"data.amount": {"$gte": 10000}},
        {
            "$or": [
                {"data.terminal_id": "trm_01jd3q8b5k2c7r9m4n6p0s1t2v"},
                {"data.channel": "online"},
            ]
        },
    ],
}


def settings_input() -> Json:
    """Delivery settings that creation and change bodies take."""
    return {
        "signature_scheme": SIGNATURE_SCHEME,
        "rate_limit": RATE_LIMIT,
        "ordered": ORDERED,
        "disabled": DISABLED,
        "headers": HEADERS,
        "filter": FILTER,
    }


def view_properties() -> Json:
    """Properties of the endpoint view beyond url, events and description."""
    return {
        **settings_input(),
        "headers": {**HEADERS, "type": "object"},
        "disabled_reason": {
            "type": ["string", "null"],
            "enum": [DISABLED_MANUALLY, DISABLED_FAILING, None],
            "description": (
                f"{DISABLED_MANUALLY}: turned off with PATCH; {DISABLED_FAILING}: every "
                "delivery attempt failed for SVC_ENDPOINT_DISABLE_AFTER (5 days by default)."
            ),
        },
        "previous_secret_expires_at": {
            **TIMESTAMP,
            "type": ["string", "null"],
            "description": "Until then the secret replaced by the last rotation signs too.",
        },
    }


def schemas(target_url: Json, events: Json, description: Json) -> Json:
    return {
        "WebhookEndpointUpdate": obj(
            {
                "url": target_url,
                "events": events,
                "description": description,
                **settings_input(),
                "replay": {
                    "type": "boolean",
                    "default": False,
                    "description": (
                        "With disabled false only: deliver the events skipped while the "
                        "endpoint was disabled (outcome skipped_disabled), in the order they "
                        "were created."
                    ),
                },
            },
            required=[],
            description="The fields to change; the others stay as they are.",
            # replay true only with disabled false (else 422 replay_without_enabling)
            **{
                "if": {"properties": {"replay": {"const": True}}, "required": ["replay"]},
                "then": {"properties": {"disabled": {"const": False}}, "required": ["disabled"]},
            },
            examples=[{"events": ["payment.succeeded", "payment.failed"], "rate_limit": 50}],
        ),
        "SecretRotation": obj(
            {
                "expire_previous_in": {
                    "type": ["integer", "null"],
                    "minimum": 0,
                    "maximum": MAX_EXPIRE_PREVIOUS,
                    "default": DEFAULT_EXPIRE_PREVIOUS,
                    "description": (
                        "Seconds the replaced secret keeps signing, next to the new one; 0 "
                        "stops it at once. An older replaced secret stops at once either way."
                    ),
                }
            },
            required=[],
            examples=[{"expire_previous_in": 3600}],
        ),
        "RecoverRequest": obj(
            {
                "since": {
                    **TIMESTAMP,
                    "description": "ISO 8601 time with its offset, e.g. 2026-11-21T08:00:00Z.",
                    "examples": ["2026-11-21T08:00:00Z"],
                }
            },
            examples=[{"since": "2026-11-21T08:00:00Z"}],
        ),
        "RecoverScheduled": obj(
            {
                "endpoint_id": id_of("we", "webhook endpoint"),
                "events": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": RECOVER_LIMIT,
                    "description": "Events queued for delivery, oldest first.",
                },
                "has_more": {
                    "type": "boolean",
                    "description": (
                        "More were found than one call sends (SVC_MAX_RECOVER_EVENTS, at "
                        f"most {RECOVER_LIMIT:,}): call again with the same since once these "
                        "are delivered."
                    ),
                },
                "status": {"const": "scheduled"},
            }
        ),
    }
