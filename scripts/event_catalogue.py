"""Write docs/api/event-types.md, the catalogue of event types, from the OpenAPI description.

Every type of ``svc.envelope.EVENT_TYPES`` gets a section: what its ``data`` holds (the
``<Type>Data`` schema of the description the API serves) and an example delivery body built
from that schema. Run it after changing an event's schema:

    .venv/bin/python scripts/event_catalogue.py

``tests/integration/test_event_catalogue.py`` fails while the page differs from what this
writes, or lacks a type.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "api" / "event-types.md"
sys.path.insert(0, str(ROOT))

from api.description import document  # noqa: E402
from api.description.shapes import event_schema_name  # noqa: E402
from svc.envelope import EVENT_TYPES  # noqa: E402

Json = dict[str, Any]

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

INTRO = """\
# Event types

Every event the service sends, its `data` and an example delivery body. Each delivery is the
same envelope: `id` (`evt_…`, deduplicate on it), `type`, `created_at` (ISO 8601 UTC with
milliseconds), `environment` (`test` or `live`) and `data`, the object the event is about.
Subscribe an endpoint to the types it wants with `events` (see
[Webhooks and events](webhooks.md)); any other name is answered `422` with the field error
`unknown_event_type`. Members marked *optional* are left out when they do not apply: a
`data` never holds `null`. A test send (an endpoint's `test`, the dashboard's test-event
button) is a `payment.succeeded` whose `data` holds fixed sample values.

Verifying the signature and deduplicating are in
[Verifying a delivery](../receiving/verifying.md) and
[Events](../receiving/events.md). The same schemas are in the OpenAPI description
(`GET /openapi.json`, its `webhooks` and the `<Type>Event` and `<Type>Data` schemas).

This page is written by `scripts/event_catalogue.py` from that description.

| Type | `data` |
|---|---|
"""


def _type_of(schema: Json) -> str:
    """A member's type as the table shows it."""
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return " \\| ".join(f"`{value}`" for value in schema["enum"])
    kind = schema.get("type", "any")
    shown = " or ".join(kind) if isinstance(kind, list) else str(kind)
    if "format" in schema:
        shown += f" ({schema['format']})"
    if "pattern" in schema and "examples" in schema:
        shown += f", `{str(schema['examples'][0]).split('_')[0]}_…`"
    return shown


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


def data_schemas() -> dict[str, Json]:
    """The ``data`` schema of each event type, from the description the API serves."""
    schemas = document()["components"]["schemas"]
    return {t: schemas[f"{event_schema_name(t)}Data"] for t in EVENT_TYPES}


def _section(event_type: str, schema: Json) -> str:
    required = set(schema.get("required", []))
    rows = [
        f"| `{name}` | {_type_of(member)} | {'' if name in required else '*optional* '}"
        f"{member.get('description', '')} |".replace("  |", " |")
        for name, member in schema["properties"].items()
    ]
    body = json.dumps(example(event_type, schema), indent=2, ensure_ascii=False)
    return "\n".join(
        [
            f"## {event_type}",
            "",
            schema.get("description", ""),
            "",
            "| Member | Type | Notes |",
            "|---|---|---|",
            *rows,
            "",
            "```json",
            body,
            "```",
            "",
        ]
    )


def render() -> str:
    """The whole page."""
    schemas = data_schemas()
    index = [
        f"| [`{t}`](#{t.replace('.', '')}) | {schemas[t].get('description', '')} |"
        for t in EVENT_TYPES
    ]
    sections = [_section(t, schemas[t]) for t in EVENT_TYPES]
    return INTRO + "\n".join(index) + "\n\n" + "\n".join(sections)


def main() -> int:
    PAGE.write_text(render(), encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
