"""The webhook endpoint object and its forms, in the OpenAPI description."""

from __future__ import annotations

from api.description import endpoint_operations
from api.description.shapes import list_of
from api.input.fields import MAX_DESCRIPTION, MAX_URL_LENGTH
from api.openapi import (
    ENVIRONMENT,
    TIMESTAMP,
    Json,
    id_of,
    obj,
    ref,
)
from svc.envelope import EVENT_TYPES

URL: Json = {
    "type": "string",
    "format": "uri",
    "maxLength": MAX_URL_LENGTH,
    "description": "http:// or https:// URL with a host and no credentials.",
    "examples": ["https://shop.example/webhooks/svc"],
}
BROKER_URL = "amqps://shop:s3cret@mq.shop.example/sales?exchange=payments&routing_key=svc"
TARGET_URL: Json = {
    **URL,
    "description": (
        "Where deliveries go: an http:// or https:// URL with a host and no credentials, or a "
        "RabbitMQ destination, amqp[s]://user:password@host:port/vhost with the exchange and, "
        "optionally, the routing key as its only query parameters (see the second example), "
        "whose events are published to that exchange (with the event type as the routing key "
        "when none is given). A destination's "
        "password is stored encrypted and shown as ****; a change that sends the URL back "
        "as shown keeps it for the same scheme, host, port and user (else password_required). "
        "A host deliveries never reach is refused with private_target: localhost or a "
        "loopback, private, link-local or other non-public IP address, also one carried in "
        "IPv6 (IPv4-mapped, NAT64, 6to4; Teredo, site-local and IPv4-compatible addresses "
        "are always refused), unless the installation allows private targets; a host name is "
        "checked again, after DNS, at each delivery."
    ),
    "examples": ["https://shop.example/webhooks/svc", BROKER_URL],
}
SHOWN_URL: Json = {
    **URL,
    "description": (
        "Where deliveries go: an http:// or https:// URL, or a RabbitMQ destination with "
        "its password shown as ****."
    ),
    "examples": [
        "https://shop.example/webhooks/svc",
        BROKER_URL.replace("s3cret", "****"),
    ],
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
        "url": SHOWN_URL,
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
            dependentSchemas=endpoint_operations.CERTIFICATE_PAIR,
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
