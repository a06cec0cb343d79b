"""The runs of the API's side of ``make bench``, each a module with one interface.

A section module has ``KEY`` (its entry in the results JSON and its ``--only`` name),
``async def run(run: Run) -> dict`` (the measurements), ``targets(result) -> list[Goal]``
(its targets, measured or not) and ``markdown(result) -> list[str]`` (its part of the
README's results). The suite runs them after the delivery runs, in the order of
``sections()``, and the report lists their targets in the same order.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from benchmarks.runs import Bench
    from benchmarks.service import Stores
    from harness.processes import Processes


@dataclass(frozen=True, slots=True)
class Run:
    """What a section's run may use: the suite's receivers, processes and stores."""

    bench: Bench
    procs: Processes
    stores: Stores
    workdir: Path
    admin_url: str
    """Where a run that needs a database of its own creates (and drops) it."""
    smoke: bool
    """Tiny counts: the harness smoke run takes every section this way so it cannot rot."""


@dataclass(frozen=True, slots=True)
class Goal:
    """One target: its name, the measured value (None when not measured), the goal in words
    and the check of a measured value."""

    name: str
    value: float | None
    goal: str
    check: Callable[[float], bool]


OPERATORS = {"≥": operator.ge, ">": operator.gt, "≤": operator.le, "=": operator.eq}


def check(goal: str) -> Callable[[float], bool]:
    """The check of a goal written ``≥ 0.85``, ``> 1``, ``≤ 5,000`` or ``0``."""
    compare, bound = goal.split(" ") if " " in goal else ("=", goal)
    return lambda value: bool(OPERATORS[compare](value, float(bound.replace(",", ""))))


def goal(name: str, value: float | None, written: str) -> Goal:
    """A target whose goal is written as ``check`` reads it."""
    return Goal(name, value, written, check(written))


class Section(Protocol):
    KEY: str

    async def run(self, run: Run) -> dict[str, Any]: ...

    def targets(self, result: dict[str, Any] | None) -> list[Goal]: ...

    def markdown(self, result: dict[str, Any] | None) -> list[str]: ...


def sections() -> list[Section]:
    """Every section, in the order the suite runs them."""
    from benchmarks import api_ceiling, fanout, tracing_cost, webhook_latency
    from benchmarks.longpoll import section as longpolls

    return [api_ceiling, webhook_latency, longpolls, fanout, tracing_cost]


def table(header: str, rows: Iterable[Sequence[Any]]) -> list[str]:
    """A Markdown table: ``header`` names the columns (`` | `` between them), the first
    aligned left and the others right, each row's cells in that order."""
    columns = header.count(" | ")
    cells = (" | ".join(str(cell) for cell in row) for row in rows)
    return [f"| {header} |", "|---|" + "---:|" * columns, *(f"| {row} |" for row in cells), ""]
