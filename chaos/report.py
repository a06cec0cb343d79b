"""Recording a run: the results file ``<date>.json`` and the Markdown table of the README."""

from __future__ import annotations

import math
from typing import Any

from chaos.verdict import Verdict, percent

BEGIN = "<!-- results:begin -->"
END = "<!-- results:end -->"
RECOVERY_TARGET_S = 10.0

HEADER = (
    "| scenario | down (s) | accepted | delivered per endpoint | lost | duplicates (share) "
    "| double payments | failed requests | answers retried | recover (s) | drained (s) "
    "| p99 answer in fault (s) | role restarts | recovered unaided |\n"
    "|---|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---|---|\n"
)


def _delivered(per_endpoint: dict[str, int]) -> str:
    values = sorted(per_endpoint.values())
    if not values:
        return "–"
    if values[0] == values[-1]:
        return f"{values[0]:,} ×{len(values)}"
    return f"{values[0]:,}–{values[-1]:,}"


def _failed(failed: dict[str, int]) -> str:
    return ", ".join(f"{n:,} × {status}" for status, n in failed.items()) or "0"


def _seconds(value: float | None, target: float = math.inf) -> str:
    return "never" if value is None else f"{value:.1f}{' ⚠' if value > target else ''}"


def _recover(verdict: Verdict) -> str:
    text = _seconds(verdict.recover_s, RECOVERY_TARGET_S)
    if verdict.stop_recover_s:
        flows = ", ".join(_seconds(s, RECOVERY_TARGET_S) for s in verdict.stop_recover_s)
        text += f"; after each stop: {flows}"
    return text


def _restarts(verdict: Verdict) -> str:
    parts = []
    for role, deaths in verdict.role_deaths.items():
        if deaths:
            unexpected = verdict.unexpected_deaths.get(role, 0)
            note = f" ({unexpected} on its own)" if unexpected else ""
            parts.append(f"{role} {deaths}{note}")
    return ", ".join(parts) or "none"


def row(verdict: Verdict) -> str:
    cells = [
        f"{verdict.scenario} ({verdict.fault})",
        f"{verdict.fault_seconds:.0f}",
        f"{verdict.accepted:,}",
        _delivered(verdict.delivered),
        f"{verdict.lost:,}",
        f"{verdict.duplicates:,} ({percent(verdict.duplicate_share)})",
        f"{verdict.double_payments:,}",
        _failed(verdict.failed_requests),
        _failed(verdict.retried_answers),
        _recover(verdict),
        _seconds(verdict.drain_s),
        "–" if verdict.answer_p99_s is None else f"{verdict.answer_p99_s:.2f}",
        _restarts(verdict),
        "yes" if verdict.recovered else "**no**",
    ]
    return "| " + " | ".join(cells) + " |\n"


def table(verdicts: list[Verdict]) -> str:
    return HEADER + "".join(row(v) for v in verdicts)


def section(run: dict[str, Any], verdicts: list[Verdict]) -> str:
    """The README's results section: when and how it ran, the table, the verdict."""
    settings = run["settings"]
    versions = run["versions"]
    failed = [f"{v.scenario}: {', '.join(v.failures())}" for v in verdicts if not v.passed]
    outcome = (
        f"**Failed ({'; '.join(failed)}): see the results file.**\n"
        if failed
        else "No event lost, no payment doubled.\n"
    )
    return (
        f"Run of {run['date']} ({run['machine']['cores']} cores, "
        f"{run['duration_s'] / 60:.1f} min; RabbitMQ {versions['rabbitmq']}, "
        f"PostgreSQL {versions['postgresql']}, Redis {versions['redis']}, "
        f"Python {versions['python']}): {settings['rate_per_s']:g} payments/s, "
        f"{settings['healthy_receivers']} receivers answering 204 plus one endpoint down "
        f"{settings['flaky_down_s']:g} s per scenario, ladder `{settings['retry_ladder']}`. "
        f"Raw numbers: [`results/{results_name(run)}`](results/{results_name(run)}).\n\n"
        + table(verdicts)
        + "\n"
        + outcome
    )


def results_name(run: dict[str, Any]) -> str:
    label = run.get("label")
    return f"{run['date']}-{label}.json" if label else f"{run['date']}.json"
