"""The event-type catalogue (docs/api/event-types.md) lists every type the service sends, as
the description the API serves has it, and an unknown type's 422 names the types and the page."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest
from jsonschema import Draft202012Validator

from api.description import document
from api.description.shapes import event_schema_name
from svc.envelope import EVENT_TYPES
from tests.conftest import Api

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "api" / "event-types.md"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "event_catalogue", ROOT / "scripts" / "event_catalogue.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sections(text: str) -> dict[str, str]:
    """Each ``## <type>`` section of the page, by its heading."""
    parts = re.split(r"^## (\S+)$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_the_page_has_a_section_for_every_event_type() -> None:
    sections = _sections(PAGE.read_text(encoding="utf-8"))
    assert list(sections) == list(EVENT_TYPES)


def test_the_page_is_what_the_description_gives() -> None:
    """Regenerate with ``.venv/bin/python scripts/event_catalogue.py`` when this fails."""
    assert PAGE.read_text(encoding="utf-8") == _generator().render()


def test_each_member_of_a_types_data_is_on_the_page() -> None:
    schemas = document()["components"]["schemas"]
    sections = _sections(PAGE.read_text(encoding="utf-8"))
    for event_type in EVENT_TYPES:
        members = schemas[f"{event_schema_name(event_type)}Data"]["properties"]
        rows = re.findall(r"^\| `([a-z_]+)` \|", sections[event_type], flags=re.MULTILINE)
        assert rows == list(members), event_type


@pytest.mark.parametrize("event_type", EVENT_TYPES)
def test_each_example_is_a_valid_delivery_of_its_type(event_type: str) -> None:
    """The example on the page validates against the type's event schema in the description."""
    section = _sections(PAGE.read_text(encoding="utf-8"))[event_type]
    match = re.search(r"```json\n(.*?)\n```", section, flags=re.DOTALL)
    assert match is not None, event_type
    body = json.loads(match.group(1))
    described = document()
    schema = {
        "$ref": f"#/components/schemas/{event_schema_name(event_type)}Event",
        "components": described["components"],
    }
    Draft202012Validator(schema).validate(body)
    assert body["type"] == event_type


async def test_an_unknown_event_type_is_answered_with_the_types_and_the_page(api: Api) -> None:
    status, body = await api.call(
        "POST",
        "/v1/webhook_endpoints",
        json={"url": "https://shop.example/hooks", "events": ["payment.paid"]},
    )
    assert status == 422, body
    assert isinstance(body, dict)
    [error] = body["errors"]
    assert (error["field"], error["code"]) == ("events[0]", "unknown_event_type")
    assert "'payment.paid' is not an event type" in error["detail"]
    for event_type in EVENT_TYPES:
        assert event_type in error["detail"]
    assert "docs/api/event-types.md" in error["detail"]


async def test_an_unknown_type_filter_is_answered_with_the_types_and_the_page(api: Api) -> None:
    status, body = await api.call("GET", "/v1/events?type=payment.paid")
    assert status == 422, body
    assert isinstance(body, dict)
    [error] = body["errors"]
    assert (error["field"], error["code"]) == ("type", "unknown_event_type")
    assert all(event_type in error["detail"] for event_type in EVENT_TYPES)
    assert "docs/api/event-types.md" in error["detail"]
