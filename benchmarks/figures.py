"""How the report and the charts read and print figures: rows by system, ratios, and
figures that were not measured."""

from __future__ import annotations

import math
from typing import Any


def by_system(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {row["system"]: row for row in rows}


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or not b or math.isnan(a) or math.isnan(b):
        return None
    return round(a / b, 2)


def missing(value: Any) -> bool:
    """A figure that was not measured: None, or NaN (a percentile of no samples)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def fmt(value: Any, digits: int = 0) -> str:
    if missing(value):
        return "–"
    if isinstance(value, float | int):
        return f"{value:,.{digits}f}"
    return str(value)
