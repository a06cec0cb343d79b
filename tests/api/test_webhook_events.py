"""The document's webhooks: one per event type the service sends, each body schema sound."""

from __future__ import annotations

import orjson
import pytest
from jsonschema import Draft202012Validator

from api.description import document
from svc.envelope import EVENT_TYPES, new_event
from svc.webhooks.flow import SAMPLE_PAYMENT
from tests.event_schemas import body_schema


def test_every_event_type_has_its_webhook_and_every_webhook_is_an_event_type() -> None:
    doc = document()
    assert list(doc["webhooks"]) == list(EVENT_TYPES)
    for event_type, item in doc["webhooks"].items():
        schema = body_schema(doc, event_type)
        event = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
        assert event["properties"]["type"] == {"const": event_type}
        assert set(event["required"]) == {"id", "type", "created_at", "environment", "data"}
        assert list(item["post"]["responses"]) == ["2XX", "default"]


def test_the_union_of_events_names_each_event_once() -> None:
    union = document()["components"]["schemas"]["WebhookEvent"]
    assert set(union["discriminator"]["mapping"]) == set(EVENT_TYPES)
    assert len(union["oneOf"]) == len(EVENT_TYPES)


@pytest.mark.parametrize(
    ("event_type", "data", "valid"),
    [
        ("payment.succeeded", dict(SAMPLE_PAYMENT), True),
        ("payment.succeeded", {**SAMPLE_PAYMENT, "extra": 1}, False),
        ("payment.failed", dict(SAMPLE_PAYMENT), False),
        ("terminal.online", {"id": "trm_x", "object": "terminal"}, False),
    ],
)
def test_a_body_matches_its_schema_only_when_the_service_could_send_it(
    event_type: str, data: dict[str, object], valid: bool
) -> None:
    body = orjson.loads(new_event(event_type, "test", data).body)
    validator = Draft202012Validator(body_schema(document(), event_type))
    assert validator.is_valid(body) is valid
