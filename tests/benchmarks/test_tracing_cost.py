"""The tracing-cost section's parts that need no service: the collector stand-in, the events'
trace contexts, the targets and the table."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import aiohttp
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.sampling import TraceIdRatioBased
from opentelemetry.trace import SpanKind

from benchmarks import tracing_cost
from benchmarks.collector import Collector, collecting
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
        assert (collector.requests, collector.spans) == (3, 3)
        async with (
            aiohttp.ClientSession() as session,
            session.post(collector.url + "/v1/traces", data=b"\xff\xff") as answer,
        ):
            assert answer.status == 400
        assert collector.refused == 1


def test_events_carry_new_traces_sampled_at_the_ratio() -> None:
    rng, sampler = random.Random("test"), TraceIdRatioBased(tracing_cost.RATIO)
    parents = [tracing_cost.traceparent(rng, sampler) for _ in range(5000)]
    assert len({value for value, _ in parents}) == len(parents)
    for value, kept in parents[:50]:
        version, trace_id, span_id, flags = value.split("-")
        assert (version, len(trace_id), len(span_id)) == ("00", 32, 16)
        assert flags == ("01" if kept else "00")
    assert 350 <= sum(kept for _, kept in parents) <= 650


def test_each_side_takes_each_place_equally_often() -> None:
    orders = [tuple(tracing_cost.order(n)) for n in range(1, tracing_cost.ROUNDS + 1)]
    assert len(set(orders[:6])) == 6 and orders[6:] == orders[:6]
    for place in range(3):
        counts = {mode: sum(o[place] == mode for o in orders) for mode in tracing_cost.MODES}
        assert set(counts.values()) == {tracing_cost.ROUNDS // 3}
    collector = Collector(url="http://127.0.0.1:4318")
    assert tracing_cost.environment("off", collector) == {}
    on, sdk = (tracing_cost.environment(mode, collector) for mode in ("on", "sdk"))
    assert on["OTEL_EXPORTER_OTLP_ENDPOINT"] == sdk["OTEL_EXPORTER_OTLP_ENDPOINT"]
    assert on["OTEL_TRACES_SAMPLER"] == sdk["OTEL_TRACES_SAMPLER"] == "parentbased_traceidratio"
    assert on["OTEL_TRACES_SAMPLER_ARG"] == "0.1"
    assert (on["SVC_OTEL_EXPORTER"], sdk["SVC_OTEL_EXPORTER"]) == ("native", "sdk")


def _run(mode: str, rate: float, spans: int, sampled: int, number: int = 1) -> dict[str, Any]:
    return {
        "mode": mode,
        "round": number,
        "rate_per_s": rate,
        "delivered": 1000,
        "cpu_us_per_delivery_dispatcher": 250,
        "spans": spans,
        "sampled_events": sampled,
    }


def test_targets_and_table() -> None:
    runs = [_run("off", 4000, 0, 100), _run("on", 3900, 101, 101), _run("sdk", 3600, 99, 99)]
    result = {**tracing_cost.summary(runs), "events": 1000, "rounds": 1}
    assert result["round_ratios"] == {"on": [0.975], "sdk": [0.9]}
    cost, spans = tracing_cost.targets(result)
    assert "tracing" in cost.name and cost.value == 0.975 and cost.check(cost.value)
    assert spans.value == 0.099 and spans.check(spans.value) and not spans.check(0.0)
    table = "\n".join(tracing_cost.markdown(result))
    assert "| tracing on (10 % sampled) | 3,900 | 3,900 | 0.975 | 250 | 101 (101) |" in table
    assert "exporter | 3,600 | 3,600 | 0.900 | 250 | 99 (99) |" in table
    assert "(on: 0.975)" in table
    assert [goal.value for goal in tracing_cost.targets(None)] == [None, None]
    assert tracing_cost.markdown(None) == []


def test_a_traced_side_that_exported_nothing_fails_the_spans_goal() -> None:
    runs = [_run("off", 4000, 0, 100), _run("on", 3900, 0, 101), _run("sdk", 3600, 99, 99)]
    _, spans = tracing_cost.targets(tracing_cost.summary(runs))
    assert spans.value == 0.0 and not spans.check(spans.value)


def test_the_cost_pairs_each_round_on_with_its_own_off() -> None:
    """A machine slowing down round after round must not count as tracing's cost: each
    round's on is divided by that round's off, and a round too short to time is left out."""
    runs = [
        _run("off", 4000, 0, 0, 1),
        _run("on", 3800, 9, 9, 1),  # 0.95
        _run("sdk", 3800, 9, 9, 1),
        _run("on", 3000, 9, 9, 2),
        _run("sdk", 3000, 9, 9, 2),
        _run("off", 3000, 0, 0, 2),  # 1.0
        _run("sdk", 2000, 9, 9, 3),
        _run("off", 2000, 0, 0, 3),
        _run("on", 1960, 9, 9, 3),  # 0.98
        _run("on", float("nan"), 9, 9, 4),
        _run("off", 900, 0, 0, 4),
        _run("sdk", 900, 9, 9, 4),
    ]
    found = tracing_cost.summary(runs)
    assert found["round_ratios"]["on"] == [0.95, 1.0, 0.98]
    assert found["cost_ratio"] == 0.98
    assert found["rows"]["off"]["rate_per_s"] == 2000  # the worse middle of four
