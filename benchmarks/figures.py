"""How the report, the targets and the chart read and print figures."""

from __future__ import annotations

import math
from typing import Any


def by_system(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {row["system"]: row for row in rows}


def missing(value: Any) -> bool:
    """A figure that was not measured: None, or NaN (a percentile of no samples)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def ratio(a: float | None, b: float | None) -> float | None:
    if missing(a) or missing(b) or not b:
        return None
    assert a is not None
    return round(a / b, 2)


def fmt(value: Any, digits: int = 0) -> str:
    if missing(value):
        return "–"
    if isinstance(value, float | int):
        return f"{value:,.{digits}f}"
    return str(value)
