"""(section of ``make bench``: long polls; see ``benchmarks.sections``)."""

from __future__ import annotations

from typing import Any

from benchmarks.sections import Goal, Run

KEY = "longpolls"


async def run(run: Run) -> dict[str, Any]:
    return {}


def targets(result: dict[str, Any] | None) -> list[Goal]:
    return []


def markdown(result: dict[str, Any] | None) -> list[str]:
    return []
