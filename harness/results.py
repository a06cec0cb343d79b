"""Recording a run: its JSON file, and its Markdown between two markers of a README."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any


def write_json(path: Path, body: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(body, indent=2, ensure_ascii=False, default=str) + "\n")
    return path


def update_readme(path: Path, text: str, begin: str, end: str) -> None:
    """Replace what stands between the markers ``begin`` and ``end`` of ``path`` by ``text``."""
    current = path.read_text()
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.DOTALL)
    if not pattern.search(current):
        raise ValueError(f"{path} has no {begin} … {end} markers")
    path.write_text(pattern.sub(lambda _: f"{begin}\n{text}{end}", current, count=1))
