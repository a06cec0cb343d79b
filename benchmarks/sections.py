"""The interface of the API's sections of ``make bench`` (``Section``) and their targets."""

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
    """What a section's run may use; ``smoke`` asks for tiny counts."""

    bench: Bench
    procs: Processes
    stores: Stores
    workdir: Path
    admin_url: str
    smoke: bool


@dataclass(frozen=True, slots=True)
class Goal:
    """One target: its name, measured value (None: not measured), goal in words and check."""

    name: str
    value: float | None
    goal: str
    check: Callable[[float], bool]

    def row(self) -> dict[str, Any]:
        met = None if self.value is None else bool(self.check(self.value))
        return {"target": self.name, "value": self.value, "goal": self.goal, "met": met}


OPERATORS = {"≥": operator.ge, ">": operator.gt, "≤": operator.le, "=": operator.eq}


def goal(name: str, value: float | None, written: str) -> Goal:
    """A target whose goal is written ``≥ 0.85``, ``> 1``, ``≤ 5,000`` or ``0``."""
    compare, bound = written.split(" ") if " " in written else ("=", written)
    limit = float(bound.replace(",", ""))
    return Goal(name, value, written, lambda v: bool(OPERATORS[compare](v, limit)))


class Section(Protocol):
    KEY: str

    async def run(self, run: Run) -> dict[str, Any]: ...

    def targets(self, result: dict[str, Any] | None) -> list[Goal]: ...

    def markdown(self, result: dict[str, Any] | None) -> list[str]: ...


def sections() -> list[Section]:
    """Every section, in the order the suite runs them and the report lists their targets."""
    from benchmarks import api_ceiling, fanout, tracing_cost, webhook_latency
    from benchmarks.longpoll import section as longpolls

    return [api_ceiling, webhook_latency, longpolls, fanout, tracing_cost]


def table(header: str, rows: Iterable[Sequence[Any]]) -> list[str]:
    """A Markdown table under ``header`` (``a | b``), the first column aligned left."""
    cells = (" | ".join(str(cell) for cell in row) for row in rows)
    rule = "|---|" + "---:|" * header.count(" | ")
    return [f"| {header} |", rule, *(f"| {row} |" for row in cells), ""]
