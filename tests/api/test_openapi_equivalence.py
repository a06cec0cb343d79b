"""The OpenAPI document derived from the route declarations says what the document said before
they existed, apart from the named changes: those that make it pass Redocly's recommended
rules, and the features added since, each named."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from api.description import SERVERS, TAGS, document

Json = dict[str, Any]
BEFORE = Path(__file__).parent / "fixtures" / "openapi-before.json"


def _servers(doc: Json) -> None:
    """no-empty-servers: the paths are relative to the service that serves the document."""
    doc["servers"] = [{"url": "/", "description": SERVERS[0]["description"]}]


def _webhooks_name_no_security(doc: Json) -> None:
    """security-defined: the service sends no credential to an endpoint, only signatures."""
    for item in doc["webhooks"].values():
        item["post"]["security"] = []


def _tags_described(doc: Json) -> None:
    """tag-description: each tag says what its operations are about."""
    doc["tags"] = [{**tag, "description": TAGS[tag["name"]]} for tag in doc["tags"]]


def _document_members_typed(doc: Json) -> None:
    """no-required-schema-properties-undefined: the members GET /openapi.json requires."""
    schema = doc["paths"]["/openapi.json"]["get"]["responses"]["200"]["content"]
    properties = schema["application/json"]["schema"]["properties"]
    properties["info"] = properties["paths"] = {"type": "object"}


def _delivery_log_search(doc: Json) -> None:
    """Issue 39: the delivery log searched (its filters on an endpoint's log, the scope's log
    GET /v1/deliveries) and events skipped while an endpoint is disabled (outcome and state
    skipped_disabled, replay in a PATCH), with the field codes they answer."""
    now = _normal(document())
    log = "/v1/webhook_endpoints/{endpoint_id}/deliveries"
    for path in (log, "/v1/deliveries"):
        doc["paths"][path] = now["paths"][path]
    endpoint = "/v1/webhook_endpoints/{endpoint_id}"
    update = doc["paths"][endpoint]["patch"]
    update["description"] = now["paths"][endpoint]["patch"]["description"]
    for name in ("DeliveryAttempt", "DeliveryStatus", "WebhookEndpointUpdate", "FieldError"):
        doc["components"]["schemas"][name] = now["components"]["schemas"][name]


OPERATIONAL = ("WebhookEndpointFailing", "WebhookEndpointDisabled", "WebhookEndpointEnabled")
"""Schema name stems of issue 39's operational events (and DeliveryExhausted)."""


def _operational_events_and_notices(doc: Json) -> None:
    """Issue 39: the operational events (webhook_endpoint.failing, .disabled, .enabled and
    delivery.exhausted: their webhooks, schemas and place in every list of event types) and
    GET and PUT /v1/notification_settings under the tag Notifications, with the field codes
    they answer."""
    now = _normal(document())
    path = "/v1/notification_settings"
    doc["paths"][path] = now["paths"][path]
    doc["paths"]["/v1/events"] = now["paths"]["/v1/events"]  # its type filter's choices
    for event_type in ("webhook_endpoint.failing", "webhook_endpoint.disabled",
                       "webhook_endpoint.enabled", "delivery.exhausted"):  # fmt: skip
        doc["webhooks"][event_type] = now["webhooks"][event_type]
    schemas = doc["components"]["schemas"]
    for stem in (*OPERATIONAL, "DeliveryExhausted"):
        for name in (f"{stem}Data", f"{stem}Event", f"Listed{stem}Event"):
            schemas[name] = now["components"]["schemas"][name]
    for name in ("NotificationSettings", "NotificationSettingsUpdate", "WebhookEvent",
                 "ListedEvent", "EventType", "FieldError"):  # fmt: skip
        schemas[name] = now["components"]["schemas"][name]
    at = [tag["name"] for tag in doc["tags"]].index("Webhook endpoints") + 1
    doc["tags"].insert(at, {"name": "Notifications", "description": TAGS["Notifications"]})


def _portal_sessions(doc: Json) -> None:
    """Issue 39: POST /v1/portal_sessions under the tag Portal, the permission portal:write in
    every list of permissions, and the field code invalid_origin."""
    now = _normal(document())
    path = "/v1/portal_sessions"
    doc["paths"][path] = now["paths"][path]
    schemas = doc["components"]["schemas"]
    for name in ("PortalSessionCreate", "PortalSession", "ApiKey", "ApiKeyWithSecret",
                 "ApiKeyCreate", "FieldError"):  # fmt: skip
        schemas[name] = now["components"]["schemas"][name]
    doc["tags"].append({"name": "Portal", "description": TAGS["Portal"]})


def _headers_and_filters(doc: Json) -> None:
    """Issue 40: an endpoint's custom headers, payload filter and client certificate (mTLS),
    in its creation and change bodies and its views, and the outcome proxy_error."""
    now = _normal(document())
    schemas = doc["components"]["schemas"]
    for name in ("WebhookEndpointCreate", "WebhookEndpointUpdate", "WebhookEndpoint",
                 "WebhookEndpointCreated"):  # fmt: skip
        schemas[name] = now["components"]["schemas"][name]


ALLOWED: tuple[Callable[[Json], None], ...] = (
    _servers,
    _webhooks_name_no_security,
    _tags_described,
    _document_members_typed,
    _delivery_log_search,
    _operational_events_and_notices,
    _portal_sessions,
    _headers_and_filters,
)
"""Each change made to the earlier document (lint fixes, then features), applied in turn."""


def expected() -> Json:
    doc: Json = json.loads(BEFORE.read_text())
    for change in ALLOWED:
        change(doc)
    return doc


def _normal(doc: Json) -> Json:
    normal: Json = json.loads(json.dumps(doc, sort_keys=True))
    return normal


def test_the_document_is_the_earlier_one_with_the_named_changes() -> None:
    now, before = _normal(document()), expected()
    assert sorted(now) == sorted(before)
    for part in before:
        if part in ("paths", "webhooks"):
            assert sorted(now[part]) == sorted(before[part]), part
            for name in before[part]:
                assert now[part][name] == before[part][name], (part, name)
        elif part == "components":
            for kind in before[part]:
                assert now[part][kind] == before[part][kind], (part, kind)
        assert now[part] == before[part], part
