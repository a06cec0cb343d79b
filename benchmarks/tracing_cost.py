"""What tracing costs delivery: the end-to-end drain with OpenTelemetry off, on (the
service's exporter) and on through OpenTelemetry's own, each event carrying the
``traceparent`` the API's publish would give it (10 % of traces sampled).

The three sides drain at the same time, each with its own dispatcher, database, backlog and
receiver path, so the machine's drift falls on all three alike; on ÷ off is off's dispatcher
CPU per delivery ÷ on's over the window all three were delivering, the median of the rounds.
A stand-in collector per traced side counts its spans, so a side that traced nothing fails.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

from aiohttp import web
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace.sampling import Decision, TraceIdRatioBased

from benchmarks.figures import fmt, median_of, median_run, ratios
from benchmarks.receipts import Receipt, rate_summary
from benchmarks.runs import patience_for
from benchmarks.sections import Goal, Run, goal, table
from benchmarks.service import ServiceSystem
from harness.database import bench_database
from harness.receivers import serve_locally
from harness.sampling import CpuTrace

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
EXPORTERS = {ON: "native", SDK: "sdk"}  # SVC_OTEL_EXPORTER
SAMPLED_BAND = (0.5 * RATIO, 2 * RATIO)
"""Spans at the stand-in per delivery that count as the sampler's share: about ``RATIO``."""
CPU = "cpu_us_per_delivery_dispatcher"
EVENTS, ROUNDS = 25_000, 12
SMOKE_EVENTS, SMOKE_ROUNDS = 4_000, 1
"""Enough that the three smoke drains overlap however unevenly their dispatchers start."""


@dataclass
class Collector:
    """A stand-in OpenTelemetry collector at ``url``: counts the OTLP/HTTP trace exports and
    their spans, keeps nothing else; ``refused``: requests it could not read (400)."""

    url: str = ""
    requests: int = 0
    spans: int = 0
    refused: int = 0


@asynccontextmanager
async def collecting() -> AsyncIterator[Collector]:
    """A collector stand-in listening on a free port of 127.0.0.1 while the block runs."""
    collector = Collector()
    answer = ExportTraceServiceResponse().SerializeToString()

    async def export(request: web.Request) -> web.Response:
        try:
            export = ExportTraceServiceRequest.FromString(await request.read())
        except DecodeError:
            collector.refused += 1
            raise web.HTTPBadRequest() from None
        collector.requests += 1
        for resource in export.resource_spans:
            collector.spans += sum(len(scope.spans) for scope in resource.scope_spans)
        return web.Response(body=answer, content_type="application/x-protobuf")

    app = web.Application(client_max_size=64 * 2**20)
    app.router.add_post("/v1/traces", export)
    runner, port = await serve_locally(app)
    collector.url = f"http://127.0.0.1:{port}"
    try:
        yield collector
    finally:
        await runner.cleanup()


def traceparent(rng: random.Random, sampler: TraceIdRatioBased) -> tuple[str, bool]:
    """A new trace's W3C ``traceparent`` and whether ``sampler`` keeps the trace."""
    trace_id, span_id = rng.getrandbits(128) or 1, rng.getrandbits(64) or 1
    kept = sampler.should_sample(None, trace_id, "publish").decision == Decision.RECORD_AND_SAMPLE
    return f"00-{trace_id:032x}-{span_id:016x}-{'01' if kept else '00'}", kept


def environment(mode: str, collector: Collector | None) -> dict[str, str]:
    """The service's variables of one side: OpenTelemetry's standard ones exporting to
    ``collector`` when traced (``collector`` None: off)."""
    if collector is None:
        return {}
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
        "OTEL_TRACES_SAMPLER_ARG": str(RATIO),
        "SVC_OTEL_EXPORTER": EXPORTERS[mode],
    }


async def _round(
    run: Run, collectors: dict[str, Collector], number: int, events: int
) -> list[dict[str, Any]]:
    """One round: each side's backlog stored and published with its dispatcher stopped, then
    the three dispatchers started together; a row per side."""
    async with AsyncExitStack() as stack:
        systems: dict[str, ServiceSystem] = {}
        created: dict[str, dict[str, int]] = {}
        sampled: dict[str, int] = {}
        for mode in MODES:
            database_url = await stack.enter_async_context(bench_database(run.admin_url))
            name = f"trace-{mode}{number}"
            system = ServiceSystem(
                run.procs,
                replace(run.stores, database_url=database_url),
                1,
                name,
                environment(mode, collectors.get(mode)),
                False,
                label=f"svc, 1 dispatcher, end to end, {LABELS[mode]}",
            )
            stack.push_async_callback(system.close)
            await system.open()
            rng, sampler = random.Random(name), TraceIdRatioBased(RATIO)
            parents = [traceparent(rng, sampler) for _ in range(events)]
            sampled[mode] = sum(kept for _, kept in parents)
            targets = run.bench.targets(f"{name}-tp")
            created[mode] = await system.publish(targets, events, 0, [p for p, _ in parents])
            systems[mode] = system
        spans = {mode: collector.spans for mode, collector in collectors.items()}
        for system in systems.values():
            await system.spawn()
        trace = CpuTrace({mode: s.cpu_groups()["dispatcher"] for mode, s in systems.items()})
        trace.sample()
        found = await asyncio.gather(
            *(
                run.bench.wait(f"{s.name}-tp", set(ids), patience_for(len(ids), 60), trace)
                for s, ids in zip(systems.values(), created.values(), strict=True)
            )
        )
        arrived = {mode: list(got.values()) for mode, got in zip(systems, found, strict=True)}
        for system in systems.values():
            await system.stop()  # the dispatcher's tracing flushes what it buffered on exit
    cpu = shared_window_cpu(arrived, trace)
    return [
        {
            "mode": mode,
            "round": number,
            "delivered": len(got),
            **rate_summary(got),
            CPU: cpu[mode],
            "spans": collectors[mode].spans - spans[mode] if mode in collectors else 0,
            "sampled_events": sampled[mode],
        }
        for mode, got in arrived.items()
    ]


def shared_window_cpu(arrived: dict[str, list[Receipt]], trace: CpuTrace) -> dict[str, float]:
    """Each side's CPU µs per delivery from the last side's first receipt to the first side's
    last, over its receipts in that window: all three were delivering throughout it (NaN for
    a side with no receipt in it)."""
    start = max((min(r.at_ms for r in found) for found in arrived.values() if found), default=0)
    end = min((max(r.at_ms for r in found) for found in arrived.values() if found), default=0)
    used = trace.between(start, end) if end > start else {}
    cpu = {}
    for mode, found in arrived.items():
        within = sum(1 for r in found if start <= r.at_ms <= end)
        cpu[mode] = round(used[mode] * 1e6 / within) if mode in used and within else math.nan
    return cpu


async def run(run: Run) -> dict[str, Any]:
    events, rounds = (SMOKE_EVENTS, SMOKE_ROUNDS) if run.smoke else (EVENTS, ROUNDS)
    runs: list[dict[str, Any]] = []
    async with collecting() as on, collecting() as sdk:
        for number in range(1, rounds + 1):
            log.info("tracing: round %d of %d", number, rounds)
            runs += await _round(run, {ON: on, SDK: sdk}, number, events)
    refused = on.refused + sdk.refused
    return {**summary(runs), "events": events, "rounds": rounds, "refused": refused}


def summary(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Each side's median run by CPU per delivery, each traced side's rounds of off ÷ on CPU
    per delivery and their median, and the spans that reached the stand-ins per delivery."""
    by_mode = {mode: [r for r in runs if r["mode"] == mode] for mode in MODES}
    cpu = {mode: [r[CPU] for r in found] for mode, found in by_mode.items()}
    paired = {mode: ratios(cpu[OFF], cpu[mode]) for mode in TRACED}
    delivered = {mode: sum(int(r["delivered"]) for r in by_mode[mode]) for mode in TRACED}
    return {
        "rows": {mode: median_run(found, CPU, False) for mode, found in by_mode.items()},
        "round_ratios": paired,
        "cost_ratio": median_of(paired[ON]),
        "sdk_cost_ratio": median_of(paired[SDK]),
        "spans_per_delivery": {
            mode: round(sum(r["spans"] for r in by_mode[mode]) / delivered[mode], 4)
            if delivered[mode]
            else None
            for mode in TRACED
        },
    }


def targets(result: dict[str, Any] | None) -> list[Goal]:
    result = result or {}
    low, high = SAMPLED_BAND
    spans = [v for v in (result.get("spans_per_delivery") or {}).values() if v is not None]
    cost = result.get("cost_ratio")
    return [
        goal(f"end to end with tracing on ({SHARE} sampled) ÷ off", cost, f"≥ {TARGET}"),
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
        rates, cpu = (" · ".join(fmt(r[key]) for r in runs) for key in ("rate_per_s", CPU))
        rows.append([LABELS[mode], rates, cpu, fmt(row[CPU]), fmt(cost[mode], 3), spans])
    return [
        f"**Tracing cost**: the end-to-end drain, {result['events']:,} events a side, with "
        f"OpenTelemetry off and on ({SHARE} of traces sampled, exported over OTLP/HTTP to a "
        f"stand-in); {result['rounds']} rounds, the three sides draining at the same time in "
        "each; ÷ off is off's dispatcher CPU per delivery ÷ the side's over the window all "
        "three delivered, the median of the rounds' "
        f"(on: {' · '.join(f'{r:.3f}' for r in result['round_ratios'][ON])}).",
        "",
        *table(
            "row | deliveries/s, every round | dispatcher CPU µs/delivery, every round | median "
            "| ÷ off | spans at the collector (of sampled events)",
            rows,
        ),
    ]
