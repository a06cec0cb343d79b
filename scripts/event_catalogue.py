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
from api.description.event_examples import data_schemas, example  # noqa: E402
from svc.envelope import EVENT_TYPES  # noqa: E402

Json = dict[str, Any]

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
    schemas = data_schemas(document())
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
