"""Duration text such as ``500ms``, ``30s``, ``5m``, ``6h``, ``3d`` to and from milliseconds."""

from __future__ import annotations

import re

_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION = re.compile(r"^(\d+)(ms|s|m|h|d)$")


def parse_duration(text: str, bare_seconds: bool = True) -> int:
    """Milliseconds in ``text``; a bare number is seconds if allowed. Raises ValueError."""
    value = text.strip()
    if bare_seconds and value.replace(".", "", 1).isdigit():
        return round(float(value) * 1000)
    match = _DURATION.match(value)
    if match is None:
        raise ValueError(f"{text!r} is not a duration like 500ms, 30s, 5m, 6h or 3d")
    return int(match.group(1)) * _UNITS_MS[match.group(2)]


def format_duration(ms: int) -> str:
    """The shortest exact text for ``ms``: 60000 → ``1m``, 1500 → ``1500ms``."""
    for unit in ("d", "h", "m", "s"):
        size = _UNITS_MS[unit]
        if ms >= size and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"
