"""Events, the delivery log and a resend, in the OpenAPI description."""

from __future__ import annotations

from api.description.shapes import event_schema_name, list_of
from api.openapi import (
    ENVIRONMENT,
    OPAQUE_CURSOR,
    TIMESTAMP,
    Json,
    id_of,
    obj,
    ref,
)
from api.routes.events import EVENT_ID_VALUE
from svc.envelope import EVENT_TYPES
from svc.events.model import LOGGED_OUTCOMES, SKIPPED_DISABLED

TRIGGERS = ["initial", "retry", "resend", "test"]
NULLABLE_TIME: Json = {**TIMESTAMP, "type": ["string", "null"]}


def _envelope(**extra: Json) -> Json:
    return {
        "id": EVENT_ID_VALUE,
        "object": {"const": "event"},
        "type": ref("EventType"),
        "created_at": TIMESTAMP,
        "environment": ENVIRONMENT,
        "data": {"type": "object", "description": "The object the event is about."},
        **extra,
    }


def schemas() -> Json:
    return {
        "Event": obj(
            _envelope(deliveries={"type": "array", "items": ref("DeliveryStatus")}),
            description="An event as delivered, with its delivery state per endpoint.",
        ),
        "ListedEvent": {
            "anyOf": [
                *(ref(f"Listed{event_schema_name(t)}Event") for t in EVENT_TYPES),
                ref("ForeignEvent"),
            ],
            "description": (
                "An event: its envelope exactly as delivered (the webhook's schema of its type), "
                "and object. An event another producer published keeps its producer's body, "
                "which need not match the schema of its type (ForeignEvent)."
            ),
        },
        "ForeignEvent": {
            "type": "object",
            "properties": {
                "id": EVENT_ID_VALUE,
                "object": {"const": "event"},
                "type": {"type": "string"},
            },
            "required": ["object"],
            "description": (
                "An event another producer published on the events exchange: its body as "
                "published, and object; its other fields are the producer's."
            ),
        },
        "EventList": list_of("ListedEvent", "Events, newest first."),
        "DeliveryStatus": obj(
            {
                "endpoint_id": id_of("we", "webhook endpoint"),
                "state": {
                    "type": "string",
                    "enum": ["succeeded", "failed", "exhausted", SKIPPED_DISABLED],
                    "description": "skipped_disabled: the endpoint was disabled when the "
                    "event came; re-enabling it with replay delivers it.",
                },
                "attempts": {"type": "integer", "minimum": 0},
                "last_attempt_at": NULLABLE_TIME,
                "last_status_code": {"type": ["integer", "null"]},
                "last_error": {"type": ["string", "null"]},
                "next_attempt_at": {
                    **NULLABLE_TIME,
                    "description": "When the next retry is due; null when none will follow.",
                },
            },
            required=["endpoint_id", "state", "attempts", "next_attempt_at"],
        ),
        "DeliveryAttempt": obj(
            {
                "id": id_of("att", "attempt"),
                "object": {"const": "delivery_attempt"},
                "event_id": EVENT_ID_VALUE,
                "event_type": ref("EventType"),
                "endpoint_id": id_of("we", "webhook endpoint"),
                "attempt": {"type": "integer", "minimum": 1},
                "trigger": {"type": "string", "enum": TRIGGERS},
                "outcome": {
                    "type": "string",
                    "enum": list(LOGGED_OUTCOMES),
                    "description": "skipped_disabled: not sent, the endpoint was disabled "
                    "(no response, duration 0); re-enabling it with replay sends it.",
                },
                "status_code": {"type": ["integer", "null"]},
                "error": {"type": ["string", "null"]},
                "duration_ms": {"type": "number", "minimum": 0},
                "response_body": {
                    "type": "string",
                    "description": "The first 256 characters the receiver answered.",
                },
                "attempted_at": TIMESTAMP,
                "next_attempt_at": NULLABLE_TIME,
            },
            description="One delivery attempt as logged.",
        ),
        "DeliveryAttemptList": list_of("DeliveryAttempt", "Delivery attempts, newest first."),
        "LogCursor": OPAQUE_CURSOR,
        "ResendScheduled": obj({"event_id": EVENT_ID_VALUE, "status": {"const": "scheduled"}}),
    }
