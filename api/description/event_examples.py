"""An example delivery body of each event type, built from its ``data`` schema in the OpenAPI
description: the Event types page of the docs (``scripts/event_catalogue.py``) and the
portal's catalogue of event types show the same examples."""

from __future__ import annotations

import json

from api.description.shapes import event_schema_name
from api.openapi import Json
from svc.envelope import EVENT_TYPES

EVENT_ID = "evt_01jd3q8b5k2c7r9m4n6p0s1t2v"
CREATED_AT = "2026-11-21T08:00:00.123Z"
SAMPLES: dict[str, object] = {
    "amount": 2450,
    "fee": 62,
    "failure_code": "card_declined",
    "cancel_reason": "expired",
    "name": "Simulation terminal",
    "simulated": True,
    "automatic": True,
    "arrival_date": "2026-11-23",
    "balance_transaction_id": "txn_01jd3q8b5k2c7r9m4n6p0s1t2v",
    "url": "https://shop.example/hooks/svc",
    "event_id": "evt_01jd3q8b5k2c7r9m4n6p0s1t2w",
    "event_type": "payment.succeeded",
    "failing_since": "2026-11-21T07:00:00.000Z",
}
"""Example values of members whose schema has none of its own (by member name)."""
PER_TYPE: dict[str, dict[str, object]] = {
    "refund.succeeded": {"amount": 1000},
    "refund.failed": {"amount": 1000, "failure_code": "insufficient_funds"},
    "chargeback.created": {"fee": 1500, "reason": "product_not_received"},
    "payout.paid": {"amount": 10000},
}
"""Example values that read better for one type than the common ones."""


def _example_value(event_type: str, name: str, schema: Json) -> object:
    special = PER_TYPE.get(event_type, {})
    if name in special:
        return special[name]
    if "const" in schema:
        return schema["const"]
    if "examples" in schema:
        return schema["examples"][0]
    if name in SAMPLES:
        return SAMPLES[name]
    if "enum" in schema:
        return schema["enum"][0]
    raise ValueError(f"{event_type}: no example value for {name}; add one to SAMPLES")


def example(event_type: str, data_schema: Json) -> Json:
    """A delivery body of ``event_type`` whose data holds the members its schema requires."""
    properties: Json = data_schema["properties"]
    data = {
        name: _example_value(event_type, name, schema)
        for name, schema in properties.items()
        if name in data_schema.get("required", [])
    }
    return {
        "id": EVENT_ID,
        "type": event_type,
        "created_at": CREATED_AT,
        "environment": "test",
        "data": data,
    }


def data_schemas(described: Json) -> dict[str, Json]:
    """The ``data`` schema of each event type, from the description the API serves."""
    schemas = described["components"]["schemas"]
    return {t: schemas[f"{event_schema_name(t)}Data"] for t in EVENT_TYPES}


def catalogue(described: Json) -> list[Json]:
    """Each event type, in the order of ``EVENT_TYPES``: its ``type``, what its ``data`` is
    (``summary``), the ``data`` schema and an example body, both as indented JSON text."""
    schemas = data_schemas(described)
    return [
        {
            "type": event_type,
            "summary": schemas[event_type].get("description", ""),
            "schema": json.dumps(schemas[event_type], indent=2, ensure_ascii=False),
            "example": json.dumps(
                example(event_type, schemas[event_type]), indent=2, ensure_ascii=False
            ),
        }
        for event_type in EVENT_TYPES
    ]
