"""Description of the webhook endpoint routes (api/routes/webhooks.py) and their schemas."""

from __future__ import annotations

from api.description import endpoint_operations
from api.description.shapes import list_of
from api.input.fields import MAX_DESCRIPTION, MAX_URL_LENGTH
from api.openapi import (
    ENVIRONMENT,
    OPAQUE_CURSOR,
    TIMESTAMP,
    Json,
    id_of,
    json_content,
    obj,
    ok,
    page_query,
    path_id,
    ref,
    v1,
    v1_post,
)
from svc.envelope import EVENT_TYPES

TAG = "Webhook endpoints"
ENDPOINT_ID = path_id("endpoint_id", "we", "webhook endpoint")

URL: Json = {
    "type": "string",
    "format": "uri",
    "maxLength": MAX_URL_LENGTH,
    "description": "http:// or https:// URL with a host and no credentials.",
    "examples": ["https://shop.example/webhooks/svc"],
}
TARGET_URL: Json = {
    **URL,
    "description": (
        "http:// or https:// URL with a host and no credentials, where deliveries go. A host "
        "deliveries never reach is refused with private_target: localhost or a loopback, "
        "private, link-local or other non-public IP address, also one carried in IPv6 "
        "(IPv4-mapped, NAT64, 6to4; Teredo, site-local and IPv4-compatible addresses are "
        "always refused), unless the installation allows private targets; a host name is "
        "checked again, after DNS, at each delivery."
    ),
}
EVENTS: Json = {
    "type": "array",
    "items": ref("EventType"),
    "minItems": 1,
    "uniqueItems": True,
    "description": "Event types to subscribe to.",
}

DESCRIPTION: Json = {
    "type": ["string", "null"],
    "maxLength": MAX_DESCRIPTION,
    "pattern": "^[^\\u0000]*$",
    "description": "Free text without U+0000; null or absent means empty.",
}


def _endpoint_properties() -> Json:
    return {
        "id": id_of("we", "webhook endpoint"),
        "object": {"const": "webhook_endpoint"},
        "url": URL,
        "events": {"type": "array", "items": ref("EventType")},
        "description": {"type": "string"},
        "environment": ENVIRONMENT,
        **endpoint_operations.view_properties(),
        "created_at": TIMESTAMP,
    }


def schemas() -> Json:
    created = {
        **_endpoint_properties(),
        "secret": {
            "type": "string",
            "pattern": "^whsec_",
            "description": "Signing secret; shown in this response only.",
        },
    }
    return {
        "EventType": {"type": "string", "enum": list(EVENT_TYPES)},
        "WebhookEndpointCreate": obj(
            {
                "url": TARGET_URL,
                "events": EVENTS,
                "description": DESCRIPTION,
                **endpoint_operations.settings_input(),
            },
            required=["url", "events"],
            examples=[
                {
                    "url": "https://shop.example/webhooks/svc",
                    "events": ["payment.succeeded", "refund.succeeded"],
                    "description": "Order fulfilment",
                }
            ],
        ),
        **endpoint_operations.schemas(TARGET_URL, EVENTS, DESCRIPTION),
        "WebhookEndpoint": obj(_endpoint_properties(), description="A webhook endpoint."),
        "WebhookEndpointCreated": obj(created, description="A new endpoint with its secret."),
        "WebhookEndpointList": list_of("WebhookEndpoint", "Endpoints, newest first."),
        "WebhookEndpointDeleted": obj(
            {
                "id": id_of("we", "webhook endpoint"),
                "object": {"const": "webhook_endpoint"},
                "deleted": {"const": True},
            }
        ),
        "TestEventScheduled": obj(
            {
                "event_id": id_of("evt", "test event"),
                "endpoint_id": id_of("we", "webhook endpoint"),
                "status": {"const": "scheduled"},
            }
        ),
    }


def paths() -> Json:
    endpoint_cursor = OPAQUE_CURSOR
    return {
        "/v1/webhook_endpoints": {
            "post": v1_post(
                {
                    "operationId": "create_webhook_endpoint",
                    "tags": [TAG],
                    "summary": "Create a webhook endpoint",
                    "description": (
                        "An organisation has at most SVC_MAX_ENDPOINTS_PER_SCOPE endpoints in "
                        "one environment; one more is 422 too_many_endpoints."
                    ),
                    "requestBody": {
                        "required": True,
                        "content": json_content(ref("WebhookEndpointCreate")),
                    },
                    "responses": ok(
                        "WebhookEndpointCreated", "Created; secret is shown only here.", "201"
                    ),
                },
                "400",
                "413",
                "415",
                "422",
            ),
            "get": v1(
                {
                    "operationId": "list_webhook_endpoints",
                    "tags": [TAG],
                    "summary": "List webhook endpoints",
                    "parameters": page_query(endpoint_cursor),
                    "responses": ok("WebhookEndpointList", "A page of endpoints."),
                },
                "422",
            ),
        },
        "/v1/webhook_endpoints/{endpoint_id}": {
            "parameters": [ENDPOINT_ID],
            "get": v1(
                {
                    "operationId": "read_webhook_endpoint",
                    "tags": [TAG],
                    "summary": "Read a webhook endpoint (never its secret)",
                    "responses": ok("WebhookEndpoint", "The endpoint."),
                },
                "404",
            ),
            "patch": endpoint_operations.update_operation(TAG),
            "delete": v1(
                {
                    "operationId": "delete_webhook_endpoint",
                    "tags": [TAG],
                    "summary": "Delete a webhook endpoint",
                    "responses": ok("WebhookEndpointDeleted", "Deleted."),
                },
                "404",
            ),
        },
        "/v1/webhook_endpoints/{endpoint_id}/deliveries": {
            "parameters": [ENDPOINT_ID],
            "get": v1(
                {
                    "operationId": "list_endpoint_deliveries",
                    "tags": [TAG],
                    "summary": "Delivery log of an endpoint, newest first",
                    "parameters": page_query(ref("LogCursor")),
                    "responses": ok("DeliveryAttemptList", "A page of delivery attempts."),
                },
                "404",
                "422",
            ),
        },
        "/v1/webhook_endpoints/{endpoint_id}/test": {
            "parameters": [ENDPOINT_ID],
            "post": v1_post(
                {
                    "operationId": "send_test_event",
                    "tags": [TAG],
                    "summary": "Send a payment.succeeded event with sample data to this endpoint",
                    "description": "A disabled endpoint answers 409 endpoint_disabled.",
                    "responses": ok("TestEventScheduled", "Queued for delivery.", "202"),
                },
                "404",
            ),
        },
        **endpoint_operations.paths(TAG, ENDPOINT_ID),
    }
