"""What tracing costs delivery: the end-to-end drain with OpenTelemetry off, on (the service's
exporter) and on through OpenTelemetry's own, 10 % of the events' traces sampled; the sides
drain at the same time, and a stand-in collector per traced side counts its spans."""

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
from benchmarks.receipts import Receipt
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
EXPORTERS = {ON: "native", SDK: "sdk"}  # SVC_OTEL_EXPORTER
SAMPLED_BAND = (0.5 * RATIO, 2 * RATIO)  # spans per delivery that count as the sampled share
CPU = "cpu_us_per_delivery_dispatcher"
EVENTS, ROUNDS = 25_000, 12
SMOKE_EVENTS = 4_000  # enough that the three drains overlap however unevenly they start


@dataclass
class Collector:
    """A stand-in OpenTelemetry collector at ``url`` counting the spans of OTLP/HTTP exports."""

    url: str = ""
    spans: int = 0


@asynccontextmanager
async def collecting() -> AsyncIterator[Collector]:
    """A collector stand-in listening on a free port of 127.0.0.1 while the block runs."""
    collector = Collector()
    answer = ExportTraceServiceResponse().SerializeToString()

    async def export(request: web.Request) -> web.Response:
        try:
            export = ExportTraceServiceRequest.FromString(await request.read())
        except DecodeError:
            raise web.HTTPBadRequest() from None
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


def traceparent(rng: random.Random, sampler: TraceIdRatioBased) -> str:
    """A new trace's W3C ``traceparent``, flagged sampled when ``sampler`` keeps the trace."""
    trace_id, span_id = rng.getrandbits(128) or 1, rng.getrandbits(64) or 1
    kept = sampler.should_sample(None, trace_id, "publish").decision == Decision.RECORD_AND_SAMPLE
    return f"00-{trace_id:032x}-{span_id:016x}-{'01' if kept else '00'}"


def environment(mode: str, collector: Collector | None) -> dict[str, str]:
    """One side's variables: OpenTelemetry's standard ones exporting to ``collector``, if any."""
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
    """Each side's backlog published, then the three dispatchers started together."""
    async with AsyncExitStack() as stack:
        systems: dict[str, ServiceSystem] = {}
        created: dict[str, dict[str, int]] = {}
        for mode in MODES:
            database_url = await stack.enter_async_context(bench_database(run.admin_url))
            stores = replace(run.stores, database_url=database_url)
            name = f"trace-{mode}{number}"
            env = environment(mode, collectors.get(mode))
            system = systems[mode] = ServiceSystem(run.procs, stores, 1, name, env, False)
            await stack.enter_async_context(system.opened())
            rng, sampler = random.Random(name), TraceIdRatioBased(RATIO)
            parents = [traceparent(rng, sampler) for _ in range(events)]
            targets = run.bench.targets(f"{name}-tp")
            created[mode] = await system.publish(targets, events, 0, parents)
        spans = {mode: collector.spans for mode, collector in collectors.items()}
        for system in systems.values():
            await system.spawn()
        trace = CpuTrace({mode: s.cpu_groups()["dispatcher"] for mode, s in systems.items()})
        trace.sample()
        waits = [
            run.bench.wait(f"{s.name}-tp", set(ids), patience_for(len(ids), 60), trace)
            for s, ids in zip(systems.values(), created.values(), strict=True)
        ]
        found = await asyncio.gather(*waits)
        arrived = {mode: list(got.values()) for mode, got in zip(systems, found, strict=True)}
        for system in systems.values():
            await system.stop()  # the dispatcher's tracing flushes what it buffered on exit
    cpu = shared_window_cpu(arrived, trace)
    return [
        {
            "mode": mode,
            "round": number,
            "delivered": len(got),
            CPU: cpu[mode],
            "spans": collectors[mode].spans - spans[mode] if mode in collectors else 0,
        }
        for mode, got in arrived.items()
    ]


def shared_window_cpu(arrived: dict[str, list[Receipt]], trace: CpuTrace) -> dict[str, float]:
    """Each side's CPU µs per delivery over the window all sides were delivering (from the last
    first receipt to the first last one), NaN for a side with no receipt in it."""
    start = max((min(r.at_ms for r in found) for found in arrived.values() if found), default=0)
    end = min((max(r.at_ms for r in found) for found in arrived.values() if found), default=0)
    used = trace.between(start, end) if end > start else {}
    cpu = {}
    for mode, found in arrived.items():
        within = sum(1 for r in found if start <= r.at_ms <= end)
        cpu[mode] = round(used[mode] * 1e6 / within) if mode in used and within else math.nan
    return cpu


async def run(run: Run) -> dict[str, Any]:
    events, rounds = (SMOKE_EVENTS, 1) if run.smoke else (EVENTS, ROUNDS)
    runs: list[dict[str, Any]] = []
    async with collecting() as on, collecting() as sdk:
        for number in range(1, rounds + 1):
            log.info("tracing: round %d of %d", number, rounds)
            runs += await _round(run, {ON: on, SDK: sdk}, number, events)
    return {**summary(runs), "events": events, "rounds": rounds}


def summary(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Each side's median run by CPU per delivery, the rounds' off ÷ on CPU per delivery (so
    0.95 means 5 % dearer) and their median, and each traced side's spans per delivery."""
    by_mode = {mode: [r for r in runs if r["mode"] == mode] for mode in MODES}
    delivered = {mode: sum(int(r["delivered"]) for r in found) for mode, found in by_mode.items()}
    spans = {mode: sum(r["spans"] for r in by_mode[mode]) for mode in (ON, SDK)}
    paired = ratios([r[CPU] for r in by_mode[OFF]], [r[CPU] for r in by_mode[ON]])
    return {
        "rows": {mode: median_run(found, CPU, False) for mode, found in by_mode.items()},
        "round_ratios": {ON: paired},
        "cost_ratio": median_of(paired),
        "spans_per_delivery": {
            mode: round(count / delivered[mode], 4) if delivered[mode] else None
            for mode, count in spans.items()
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
    spans = result["spans_per_delivery"]
    rows = [
        [mode, fmt(row[CPU]), fmt(spans.get(mode, 0), 3)] for mode, row in result["rows"].items()
    ]
    return [
        f"**Tracing cost**: the end-to-end drain, {result['events']:,} events a side, with "
        f"OpenTelemetry off, on (the service's exporter) and sdk (OpenTelemetry's), {SHARE} "
        f"of traces sampled; {result['rounds']} rounds, the three sides draining at the same "
        "time; on ÷ off is off's dispatcher CPU per delivery ÷ on's over the window all three "
        "delivered, the median of the rounds' "
        f"({' · '.join(f'{r:.3f}' for r in result['round_ratios'][ON])}).",
        "",
        *table("side | dispatcher CPU µs/delivery, median round | spans per delivery", rows),
    ]
