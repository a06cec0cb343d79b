"""The tracing-cost section's parts that need no service: the collector stand-in, the events'
trace contexts, the shared window's CPU, the targets and the table."""

from __future__ import annotations

import asyncio
import math
import random
from typing import Any

import aiohttp
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.sampling import Decision, TraceIdRatioBased
from opentelemetry.trace import SpanKind

from benchmarks import tracing_cost
from benchmarks.receipts import Receipt
from benchmarks.tracing_cost import Collector, collecting
from harness.sampling import CpuTrace
from svc.tracing import Tracing


async def test_the_stand_in_counts_what_an_exporter_sends() -> None:
    async with collecting() as collector:
        exporter = OTLPSpanExporter(endpoint=collector.url + "/v1/traces")
        tracing = Tracing(SimpleSpanProcessor(exporter), "test")

        def send() -> None:  # the exporter posts from the calling thread
            for _ in range(3):
                with tracing.span("work", SpanKind.INTERNAL):
                    pass
            tracing.shutdown()

        await asyncio.to_thread(send)
        assert collector.spans == 3
        async with (
            aiohttp.ClientSession() as session,
            session.post(collector.url + "/v1/traces", data=b"\xff\xff") as answer,
        ):
            assert answer.status == 400
        assert collector.spans == 3


def test_events_carry_new_traces_sampled_at_the_ratio() -> None:
    rng, sampler = random.Random("test"), TraceIdRatioBased(tracing_cost.RATIO)
    parents = [tracing_cost.traceparent(rng, sampler) for _ in range(5000)]
    assert len(set(parents)) == len(parents)
    for value in parents[:50]:
        version, trace_id, span_id, flags = value.split("-")
        assert (version, len(trace_id), len(span_id)) == ("00", 32, 16)
        decision = sampler.should_sample(None, int(trace_id, 16), "publish").decision
        assert flags == ("01" if decision == Decision.RECORD_AND_SAMPLE else "00")
    assert 350 <= sum(value.endswith("-01") for value in parents) <= 650


def test_traced_sides_export_to_their_collector_with_the_standard_variables() -> None:
    collector = Collector(url="http://127.0.0.1:4318")
    assert tracing_cost.environment("off", None) == {}
    on, sdk = (tracing_cost.environment(mode, collector) for mode in ("on", "sdk"))
    assert on["OTEL_EXPORTER_OTLP_ENDPOINT"] == sdk["OTEL_EXPORTER_OTLP_ENDPOINT"]
    assert on["OTEL_TRACES_SAMPLER"] == sdk["OTEL_TRACES_SAMPLER"] == "parentbased_traceidratio"
    assert on["OTEL_TRACES_SAMPLER_ARG"] == "0.1"
    assert (on["SVC_OTEL_EXPORTER"], sdk["SVC_OTEL_EXPORTER"]) == ("native", "sdk")


def _run(mode: str, cpu: float, spans: int, number: int = 1) -> dict[str, Any]:
    return {
        "mode": mode,
        "round": number,
        "delivered": 1000,
        "cpu_us_per_delivery_dispatcher": cpu,
        "spans": spans,
    }


def test_targets_and_table() -> None:
    runs = [_run("off", 240, 0), _run("on", 250, 101), _run("sdk", 300, 99)]
    result = {**tracing_cost.summary(runs), "events": 1000, "rounds": 1}
    assert result["round_ratios"] == {"on": [0.96]}
    cost, spans = tracing_cost.targets(result)
    assert "tracing" in cost.name and cost.value == 0.96 and cost.check(cost.value)
    assert spans.value == 0.099 and spans.check(spans.value) and not spans.check(0.0)
    table = "\n".join(tracing_cost.markdown(result))
    assert "| off | 240 | 0.000 |" in table
    assert "| on | 250 | 0.101 |" in table
    assert "| sdk | 300 | 0.099 |" in table
    assert "the median of the rounds' (0.960)" in table
    assert [goal.value for goal in tracing_cost.targets(None)] == [None, None]
    assert tracing_cost.markdown(None) == []


def test_a_traced_side_that_exported_nothing_fails_the_spans_goal() -> None:
    runs = [_run("off", 240, 0), _run("on", 250, 0), _run("sdk", 300, 99)]
    _, spans = tracing_cost.targets(tracing_cost.summary(runs))
    assert spans.value == 0.0 and not spans.check(spans.value)


def test_the_cost_is_off_cpu_over_on_cpu_round_by_round() -> None:
    """Each round's on is held to that round's off, so that 0.95 still means "5 % dearer";
    a round whose window held no delivery is left out."""
    runs = [
        _run("off", 200, 0, 1),
        _run("on", 210, 9, 1),  # 0.952
        _run("sdk", 220, 9, 1),
        _run("on", 300, 9, 2),
        _run("sdk", 300, 9, 2),
        _run("off", 300, 0, 2),  # 1.0
        _run("sdk", 400, 9, 3),
        _run("off", 400, 0, 3),
        _run("on", 408, 9, 3),  # 0.98
        _run("on", math.nan, 9, 4),
        _run("off", 900, 0, 4),
        _run("sdk", 900, 9, 4),
    ]
    found = tracing_cost.summary(runs)
    assert found["round_ratios"]["on"] == [0.952, 1.0, 0.98]
    assert found["cost_ratio"] == 0.98
    assert found["rows"]["off"]["cpu_us_per_delivery_dispatcher"] == 400  # worse middle of 4


def _trace() -> CpuTrace:
    """A trace of three dispatchers each using 1 ms of CPU per second, sampled every second."""
    trace = CpuTrace({mode: [] for mode in tracing_cost.MODES})
    trace.points = [(s * 1000.0, dict.fromkeys(tracing_cost.MODES, s / 1000)) for s in range(11)]
    return trace


def _receipts(*at_ms: float) -> list[Receipt]:
    return [Receipt(at, 200, "/r/e0", f"ev{at}", True) for at in at_ms]


def test_cpu_per_delivery_is_read_over_the_window_all_sides_delivered() -> None:
    arrived = {
        "off": _receipts(1_000, 2_000, 3_000, 4_000, 5_000, 6_000),
        "on": _receipts(2_000, 4_000, 6_000, 8_000),  # starts last
        "sdk": _receipts(500, 3_000, 5_000),  # ends first
    }
    cpu = tracing_cost.shared_window_cpu(arrived, _trace())
    # The window is 2 s to 5 s: 3 ms of CPU each, over 4, 2 and 2 receipts.
    assert cpu == {"off": 750, "on": 1500, "sdk": 1500}
    cpu = tracing_cost.shared_window_cpu({**arrived, "sdk": []}, _trace())
    assert math.isnan(cpu["sdk"])
