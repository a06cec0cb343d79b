"""The OpenAPI document derived from the route declarations says what the document said before
they existed, apart from the named changes that make it pass Redocly's recommended rules."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from api.description import document

Json = dict[str, Any]
BEFORE = Path(__file__).parent / "fixtures" / "openapi-before.json"

ALLOWED: tuple[Callable[[Json], None], ...] = ()
"""Each change the lint fixes made to the earlier document, applied to it in turn."""


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
