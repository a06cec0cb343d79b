"""Description of the event routes (api/routes/events.py), the delivery log and their schemas."""

from __future__ import annotations

from api.description.shapes import event_schema_name, list_of
from api.openapi import (
    ENVIRONMENT,
    OPAQUE_CURSOR,
    TIMESTAMP,
    Json,
    created_query,
    id_of,
    obj,
    ok,
    page_query,
    ref,
    v1,
    v1_post,
)
from svc.envelope import EVENT_TYPES
from svc.ids import MAX_ID_LENGTH

TAG = "Events"
# Events of this service have evt_ ids; a producer publishing on the events exchange keeps
# its own (svc.ids.is_opaque_id), so the id is described by what is accepted, not a prefix.
EVENT_ID_VALUE: Json = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_ID_LENGTH,
    "pattern": "^[^/\\u0000-\\u001f\\u007f-\\u009f]+$",
    "description": (
        "Identifier of the event: evt_… for events of this service; an event another producer "
        "published on the events exchange keeps the id it was given there (1 to 255 printable "
        "characters without '/', such as order-123 or a UUID)."
    ),
    "examples": ["evt_01jd3q8b5k2c7r9m4n6p0s1t2v", "order-123"],
}
EVENT_ID: Json = {
    "name": "event_id",
    "in": "path",
    "required": True,
    "description": "The event's id; an id of no event in the key's scope is 404 event_not_found.",
    "schema": EVENT_ID_VALUE,
}
OUTCOMES = ["success", "http_error", "timeout", "tls", "blocked", "dns", "connect", "error"]
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
                "state": {"type": "string", "enum": ["succeeded", "failed", "exhausted"]},
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
                "outcome": {"type": "string", "enum": OUTCOMES},
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


def paths() -> Json:
    types: Json = {
        "name": "type",
        "in": "query",
        "required": False,
        "description": (
            "Only events of these types: repeat it (type=a&type=b) or separate them with commas "
            "(type=a,b). Any other name is 422 unknown_event_type."
        ),
        "style": "form",
        "explode": True,
        "schema": {"type": "array", "items": {"type": "string", "enum": list(EVENT_TYPES)}},
    }
    return {
        "/v1/events": {
            "get": v1(
                {
                    "operationId": "list_events",
                    "tags": [TAG],
                    "summary": "List the events of the key's scope, newest first",
                    "description": (
                        "Events stored in this scope (those of other producers included) "
                        "while they are retained (SVC_EVENT_RETENTION). Reconcile by listing "
                        "the events created since the last one you processed."
                    ),
                    "parameters": [*page_query(ref("LogCursor")), types, *created_query()],
                    "responses": ok("EventList", "A page of events."),
                },
                "422",
            ),
        },
        "/v1/events/{event_id}": {
            "parameters": [EVENT_ID],
            "get": v1(
                {
                    "operationId": "read_event",
                    "tags": [TAG],
                    "summary": "Read an event and its delivery state per endpoint",
                    "responses": ok("Event", "The event."),
                },
                "404",
            ),
        },
        "/v1/events/{event_id}/deliveries": {
            "parameters": [EVENT_ID],
            "get": v1(
                {
                    "operationId": "list_event_deliveries",
                    "tags": [TAG],
                    "summary": "Delivery log of an event, newest first",
                    "parameters": page_query(ref("LogCursor")),
                    "responses": ok("DeliveryAttemptList", "A page of delivery attempts."),
                },
                "404",
                "422",
            ),
        },
        "/v1/events/{event_id}/resend": {
            "parameters": [EVENT_ID],
            "post": v1_post(
                {
                    "operationId": "resend_event",
                    "tags": [TAG],
                    "summary": "Deliver the event again to every endpoint subscribed now",
                    "responses": ok("ResendScheduled", "Queued for delivery.", "202"),
                },
                "404",
            ),
        },
    }
