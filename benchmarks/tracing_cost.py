"""What tracing costs delivery: the end-to-end row with OpenTelemetry off, on (the service's
exporter) and on through OpenTelemetry's own, each event carrying the ``traceparent`` the
API's publish would give it (10 % of traces sampled); alternating rounds, each side on a
database of its own; the cost is the median of the rounds' on ÷ off, and a stand-in
collector counts the spans so a traced run that traced nothing cannot pass.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from opentelemetry.sdk.trace.sampling import Decision, TraceIdRatioBased

from benchmarks.collector import Collector, collecting
from benchmarks.figures import fmt
from benchmarks.repeats import median_of, median_run, ratios
from benchmarks.runs import throughput
from benchmarks.sections import Goal, Run, table
from benchmarks.service import ServiceSystem
from benchmarks.workload import paced
from harness.database import bench_database

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
EVENTS, ROUNDS = 25_000, 12
SMOKE_EVENTS, SMOKE_ROUNDS = 1_000, 1


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
        broker, backlog, self._backlog = self.ctx.broker, self._backlog, []
        rng, sampler = random.Random(self.seed), TraceIdRatioBased(RATIO)
        parents = [traceparent(rng, sampler) for _ in backlog]
        self.sampled = sum(kept for _, kept in parents)

        async def send(seq: int) -> None:
            event, org, _ = backlog[seq]
            await broker.event(event, org, parents[seq][0])

        started_ms = time.time() * 1000
        await paced(len(backlog), 0, send)
        return started_ms


def environment(mode: str, collector: Collector) -> dict[str, str]:
    """The service's variables of one side: OpenTelemetry's standard ones when traced."""
    if mode == OFF:
        return {}
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
        "OTEL_TRACES_SAMPLER_ARG": str(RATIO),
        "SVC_OTEL_EXPORTER": EXPORTERS[mode],
    }


def order(number: int) -> Sequence[str]:
    """The order in which round ``number`` (from 1) runs its sides, the orders in turn."""
    return ORDERS[(number - 1) % len(ORDERS)]


async def _side(
    run: Run, collector: Collector, mode: str, number: int, events: int
) -> dict[str, Any]:
    """One side's run on a database of its own: the drained backlog's row and its spans."""
    async with bench_database(run.admin_url) as database_url:
        name = f"trace-{mode}{number}"
        system = TracedEvents(
            run.procs,
            replace(run.stores, database_url=database_url),
            1,
            name,
            environment(mode, collector),
            False,
            label=f"svc, 1 dispatcher, end to end, {LABELS[mode]}",
            seed=name,
        )
        try:
            await system.open()
            spans = collector.spans
            row = await throughput(run.bench, system, events)
            await system.stop()  # the dispatcher's tracing flushes what it buffered on exit
        finally:
            await system.close()
    spans = collector.spans - spans
    return {**row, "mode": mode, "round": number, "sampled_events": system.sampled, "spans": spans}


async def run(run: Run) -> dict[str, Any]:
    events, rounds = (SMOKE_EVENTS, SMOKE_ROUNDS) if run.smoke else (EVENTS, ROUNDS)
    runs: list[dict[str, Any]] = []
    async with collecting() as collector:
        for number in range(1, rounds + 1):
            log.info("tracing: round %d of %d", number, rounds)
            for mode in order(number):
                runs.append(await _side(run, collector, mode, number, events))
    return {**summary(runs), "events": events, "rounds": rounds, "refused": collector.refused}


def summary(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Each side's median run, each traced side's rounds ÷ off and their median, and the spans
    that reached the stand-in per delivery; ``runs`` in the order they ran."""
    by_mode = {mode: [r for r in runs if r["mode"] == mode] for mode in MODES}
    rates = {mode: [r["rate_per_s"] for r in found] for mode, found in by_mode.items()}
    paired = {mode: ratios(rates[mode], rates[OFF]) for mode in TRACED}
    return {
        "rows": {mode: median_run(found, "rate_per_s", True) for mode, found in by_mode.items()},
        "round_ratios": paired,
        "cost_ratio": median_of(paired[ON]),
        "sdk_cost_ratio": median_of(paired[SDK]),
        "spans_per_delivery": {mode: spans_per_delivery(by_mode[mode]) for mode in TRACED},
    }


def spans_per_delivery(traced: Sequence[dict[str, Any]]) -> float | None:
    """Spans the stand-in got over deliveries made, over every traced run."""
    delivered = sum(int(r["delivered"]) for r in traced)
    return round(sum(r["spans"] for r in traced) / delivered, 4) if delivered else None


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
    cost = {OFF: 1.0, ON: result["cost_ratio"], SDK: result["sdk_cost_ratio"]}
    rows = []
    for mode, row in result["rows"].items():
        runs = row.get("runs", [row])
        spans = fmt(sum(r["spans"] for r in runs))
        if mode in TRACED:
            spans += f" ({fmt(sum(r['sampled_events'] for r in runs))})"
        every = " · ".join(fmt(r["rate_per_s"]) for r in runs)
        cpu = row.get("cpu_us_per_delivery_dispatcher")
        rows.append(
            [LABELS[mode], every, fmt(row["rate_per_s"]), fmt(cost[mode], 3), fmt(cpu), spans]
        )
    return [
        f"**Tracing cost**: the end-to-end row, {result['events']:,} events, with OpenTelemetry "
        f"off and on ({SHARE} of traces sampled, exported over OTLP/HTTP to a stand-in); "
        f"{result['rounds']} rounds of the three in turn; ÷ off is the median of the rounds' "
        f"(on: {' · '.join(f'{r:.3f}' for r in result['round_ratios'][ON])}).",
        "",
        *table(
            "row | deliveries/s, every round | median | ÷ off | dispatcher CPU µs/delivery "
            "| spans at the collector (of sampled events)",
            rows,
        ),
    ]
