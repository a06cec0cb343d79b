"""What tracing costs delivery: the end-to-end row with OpenTelemetry on against off, same run.

The row is ``svc1-e2e``'s: a backlog of events on the events
queue drained by one dispatcher that fans each out itself, to the suite's receivers. Each
event carries the ``traceparent`` the API's publish would have given it: a new trace, marked
sampled as a 10 % trace-id-ratio sampler at the API would mark it. Traced, the dispatcher
runs with ``OTEL_TRACES_SAMPLER=parentbased_traceidratio`` and ``OTEL_TRACES_SAMPLER_ARG=0.1``
and exports to a collector stand-in on this machine (``benchmarks.collector``), through the
service's default exporter (``on``) and, for comparison, through OpenTelemetry's own batch
processor and exporter (``sdk``, ``SVC_OTEL_EXPORTER=sdk``); untraced, nothing of
OpenTelemetry is set. Same events, same count.

Each round runs the three sides at once, each on a database of its own (created and migrated
for it, dropped after it), and drains their backlogs in turns (``benchmarks.turns.in_turns``):
every dispatcher is held stopped, and each in turn runs alone for a quarter of a second; a
side's rate is its deliveries over the time it ran. Run one after another, the sides see
machines of different speed: a shared machine's speed can drift by a quarter from one
half-second to the next, far more than the cost to measure. Taking turns, each side sees the
same drift. The rounds start the
sides in the six orders in turn; the cost is the median over rounds of each round's on ÷ off,
and each side's row is its median run. Each traced side exports to a stand-in of its own,
which counts the spans that arrived, so a traced run that traced nothing cannot pass
unnoticed.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from typing import Any

from opentelemetry.sdk.trace.sampling import Decision, TraceIdRatioBased

from benchmarks import repeats
from benchmarks.collector import Collector, collecting
from benchmarks.sections import Goal, Run
from benchmarks.service import ServiceSystem
from benchmarks.turns import in_turns
from benchmarks.workload import paced
from harness.database import bench_database
from svc.amqp.messages import event_message

KEY = "tracing"
log = logging.getLogger(__name__)

RATIO = 0.1
SHARE = f"{RATIO * 100:g} %"
TARGET = 0.95
OFF, ON, SDK = "off", "on", "sdk"
MODES = (OFF, ON, SDK)
TRACED = (ON, SDK)
LABELS = {
    OFF: "tracing off",
    ON: f"tracing on ({SHARE} sampled)",
    SDK: f"tracing on ({SHARE} sampled), OpenTelemetry's exporter",
}
EXPORTERS = {ON: "native", SDK: "sdk"}
"""The ``SVC_OTEL_EXPORTER`` of each traced side."""
ORDERS = [
    rotated[::direction]
    for direction in (1, -1)
    for rotated in (MODES[i:] + MODES[:i] for i in range(len(MODES)))
]
"""The six orders of the three sides, one per round: each side takes each place twice."""
SAMPLED_BAND = (0.5 * RATIO, 2 * RATIO)
"""Spans at the stand-in per delivery that count as the sampler's share: about ``RATIO``."""


@dataclass(frozen=True, slots=True)
class Size:
    events: int
    rounds: int
    turn: float
    """Seconds each side runs alone before the next one's turn."""


FULL = Size(events=25_000, rounds=12, turn=0.25)
SMOKE = Size(events=2_000, rounds=1, turn=0.02)
"""Enough events that no side delivers them all in its first few turns, which a loop busy
reading the receiver's log can stretch well past ``turn``."""


def traceparent(rng: random.Random, sampler: TraceIdRatioBased) -> tuple[str, bool]:
    """A new trace's W3C ``traceparent`` and whether ``sampler`` keeps the trace."""
    trace_id, span_id = rng.getrandbits(128) or 1, rng.getrandbits(64) or 1
    kept = sampler.should_sample(None, trace_id, "publish").decision == Decision.RECORD_AND_SAMPLE
    return f"00-{trace_id:032x}-{span_id:016x}-{'01' if kept else '00'}", kept


@dataclass
class TracedEvents(ServiceSystem):
    """The service whose backlog events each carry a ``traceparent`` of the API's kind."""

    seed: str = ""
    sampled: int = 0
    """Events of the last backlog whose trace was marked sampled."""

    async def send_backlog(self) -> float:
        ctx, backlog = self.ctx, self._backlog
        self._backlog = []
        rng, sampler = random.Random(self.seed), TraceIdRatioBased(RATIO)
        parents = [traceparent(rng, sampler) for _ in backlog]
        self.sampled = sum(kept for _, kept in parents)

        async def send(seq: int) -> None:
            event, org, _ = backlog[seq]
            message = event_message(event, org, parents[seq][0])
            await ctx.exchange.publish(message, routing_key=event.type)

        started_ms = time.time() * 1000
        await paced(len(backlog), 0, send)
        return started_ms


def environment(mode: str, collectors: dict[str, Collector]) -> dict[str, str]:
    """The service's variables of one side: OpenTelemetry's standard ones when traced."""
    if mode == OFF:
        return {}
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": collectors[mode].url,
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
        "OTEL_TRACES_SAMPLER_ARG": str(RATIO),
        "SVC_OTEL_EXPORTER": EXPORTERS[mode],
    }


async def _round(
    run: Run, collectors: dict[str, Collector], number: int, size: Size
) -> list[dict[str, Any]]:
    """One round: the three sides, each on a database of its own, drained side by side."""
    modes = order(number)
    async with AsyncExitStack() as stack:
        systems = []
        for mode in modes:
            database_url = await stack.enter_async_context(bench_database(run.admin_url))
            name = f"trace-{mode}{number}"
            system = TracedEvents(
                run.procs,
                replace(run.stores, database_url=database_url),
                1,
                name,
                environment(mode, collectors),
                False,
                label=f"svc, 1 dispatcher, end to end, {LABELS[mode]}",
                seed=name,
            )
            stack.push_async_callback(system.close)
            await system.open()
            systems.append(system)
        before = {mode: collector.counts() for mode, collector in collectors.items()}
        rows = await in_turns(run.bench, systems, size.events, size.turn)
        for system in systems:  # the dispatchers' tracing flushes what it buffered on exit
            await system.stop()
    for mode, system, row in zip(modes, systems, rows, strict=True):
        row["mode"] = mode
        row["round"] = number
        row["sampled_events"] = system.sampled
        if mode in collectors:
            after = collectors[mode].counts()
            row["exported"] = {k: after[k] - before[mode][k] for k in after}
        else:
            row["exported"] = {"requests": 0, "spans": 0, "traces": 0}
    return rows


def order(number: int) -> Sequence[str]:
    """The order in which round ``number`` (from 1) starts its sides, the orders in turn."""
    return ORDERS[(number - 1) % len(ORDERS)]


async def run(run: Run) -> dict[str, Any]:
    size = SMOKE if run.smoke else FULL
    runs: list[dict[str, Any]] = []
    async with collecting() as on, collecting() as sdk:
        collectors = {ON: on, SDK: sdk}
        for number in range(1, size.rounds + 1):
            log.info("tracing: round %d of %d", number, size.rounds)
            runs.extend(await _round(run, collectors, number, size))
        refused = on.refused + sdk.refused
    return summary(runs, size, refused)


def summary(runs: Sequence[dict[str, Any]], size: Size, refused: int = 0) -> dict[str, Any]:
    """The section's result from its runs: each side's median run, each traced side's rounds
    ÷ off and their median, and the spans that reached the stand-in per delivery."""
    rows = {
        mode: repeats.median_run([r for r in runs if r["mode"] == mode], "rate_per_s", True)
        for mode in MODES
        if any(r["mode"] == mode for r in runs)
    }
    paired = {mode: round_ratios(runs, mode) for mode in TRACED}
    return {
        "events": size.events,
        "rounds": size.rounds,
        "turn_s": size.turn,
        "ratio_sampled": RATIO,
        "rows": rows,
        "runs": list(runs),
        "round_ratios": paired,
        "cost_ratio": repeats.median_of(paired[ON]),
        "sdk_cost_ratio": repeats.median_of(paired[SDK]),
        "spans_per_delivery": {
            mode: spans_per_delivery([r for r in runs if r["mode"] == mode]) for mode in TRACED
        },
        "refused_exports": refused,
    }


def round_ratios(runs: Sequence[dict[str, Any]], mode: str = ON) -> list[float]:
    """``mode`` ÷ off of each round whose two runs both timed their deliveries, in round
    order."""
    return repeats.ratios(*_rates_by_round(runs, mode))


def _rates_by_round(runs: Sequence[dict[str, Any]], mode: str) -> tuple[list[float], list[float]]:
    """The rates of ``mode`` and of off in the rounds that ran both, in round order."""
    by_round: dict[int, dict[str, float]] = {}
    for r in runs:
        by_round.setdefault(r["round"], {})[r["mode"]] = r["rate_per_s"]
    pairs = [pair for _, pair in sorted(by_round.items()) if mode in pair and OFF in pair]
    return [pair[mode] for pair in pairs], [pair[OFF] for pair in pairs]


def spans_per_delivery(traced: Sequence[dict[str, Any]]) -> float | None:
    """Spans the stand-in got over deliveries made, over every traced run."""
    delivered = sum(int(r["delivered"]) for r in traced)
    if not delivered:
        return None
    spans = sum(int(r["exported"]["spans"]) for r in traced)
    return round(spans / delivered, 4)


def targets(result: dict[str, Any] | None) -> list[Goal]:
    result = result or {}
    low, high = SAMPLED_BAND
    spans = [v for v in (result.get("spans_per_delivery") or {}).values() if v is not None]
    return [
        Goal(
            f"end to end with tracing on ({SHARE} sampled) ÷ off",
            result.get("cost_ratio"),
            f"≥ {TARGET}",
            lambda v: v >= TARGET,
        ),
        Goal(
            "tracing on: spans at the collector per delivery (the fewer of either exporter)",
            min(spans) if spans else None,
            f"{low:g} to {high:g} (the {SHARE} sampled; 0 would mean nothing was traced)",
            lambda v: low <= v <= high,
        ),
    ]


def markdown(result: dict[str, Any] | None) -> list[str]:
    if not result or not result.get("rows"):
        return []
    rows, runs, paired = result["rows"], result["runs"], result.get("round_ratios") or {}
    cost = {OFF: 1.0, ON: result["cost_ratio"], SDK: result.get("sdk_cost_ratio")}
    lines = [
        f"**Tracing cost**: the end-to-end row (one dispatcher draining a backlog of "
        f"{result['events']:,} events from the events queue, fanning out itself) with "
        f"OpenTelemetry off and on (parent-based, {SHARE} of traces sampled, exported "
        f"over OTLP/HTTP to a collector stand-in on this machine), through the service's "
        "default exporter and through OpenTelemetry's own (`SVC_OTEL_EXPORTER=sdk`); "
        f"{result['rounds']} rounds, each running the three at once, each on a database of "
        f"its own, in turns of {result['turn_s']:g} s alone on the machine (the others held "
        "with SIGSTOP), so that the machine's drift in speed falls on the three alike; each "
        "event carries a "
        "`traceparent` as the API's publish gives it. A run's deliveries/s is its deliveries "
        "over the time it ran; each row is the median run; ÷ off is the median of the rounds' "
        "÷ off (on: "
        f"{' · '.join(f'{r:.3f}' for r in paired.get(ON, []))}; OpenTelemetry's exporter: "
        f"{' · '.join(f'{r:.3f}' for r in paired.get(SDK, []))}).",
        "",
        "| row | deliveries/s, every round | median | ÷ off | dispatcher CPU µs/delivery "
        "| spans at the collector (of sampled events) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for mode in MODES:
        if mode not in rows:
            continue
        row, ratio = rows[mode], cost[mode]
        every = " · ".join(f"{r['rate_per_s']:,.0f}" for r in runs if r["mode"] == mode)
        cpu = row.get("cpu_us_per_delivery_dispatcher")
        spans = sum(r["exported"]["spans"] for r in runs if r["mode"] == mode)
        sampled = sum(r["sampled_events"] for r in runs if r["mode"] == mode)
        exported = f"{spans:,} ({sampled:,})" if mode in TRACED else f"{spans:,}"
        lines.append(
            f"| {LABELS[mode]} | {every} | {row['rate_per_s']:,.0f} | "
            f"{'–' if ratio is None else f'{ratio:.3f}'} | {'–' if cpu is None else cpu} "
            f"| {exported} |"
        )
    return [*lines, ""]
