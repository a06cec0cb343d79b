"""values.yaml documents every field, and the chart README covers every section of it."""

from __future__ import annotations

import re

import yaml

from tests.deploy.tools import CHART

VALUES = CHART / "values.yaml"
KEY = re.compile(r"^(\s*)(- )?([\w.-]+):(.*)$")


def undocumented(text: str) -> list[str]:
    """Keys with no comment above them, except sections (only children) and the contents of
    a documented field's default (its example payload)."""
    found: list[str] = []
    stack: list[tuple[int, bool]] = []  # (indent, documented or inside a documented field)
    previous = ""
    for line in text.splitlines():
        match = KEY.match(line)
        if match and not line.lstrip().startswith("#"):
            indent = len(match.group(1)) + (2 if match.group(2) else 0)
            while stack and stack[-1][0] >= indent:
                stack.pop()
            inherited = bool(stack) and stack[-1][1]
            documented = previous.lstrip().startswith("#") or inherited
            is_section = not match.group(4).strip()
            if not documented and not is_section:
                found.append(match.group(3))
            stack.append((indent, documented))
        if line.strip():
            previous = line
    return found


def test_every_value_is_documented() -> None:
    assert undocumented(VALUES.read_text()) == []


def test_the_check_notices_an_undocumented_value() -> None:
    text = "a:\n  # -- documented\n  b: 1\n  c: 2\n# -- d\nd:\n  e: 1\n"
    assert undocumented(text) == ["c"]


def test_readme_names_every_top_level_value() -> None:
    readme = (CHART / "README.md").read_text()
    for key in yaml.safe_load(VALUES.read_text()):
        assert f"`{key}" in readme, f"helm/svc/README.md does not mention {key}"
