"""Which spans the sampler keeps: OpenTelemetry's variables honoured, a delivery attempt of a
dropped trace costing no span, one of a kept trace a child of its parent."""

from __future__ import annotations

import time
from typing import Any

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision
from opentelemetry.trace import SpanContext, SpanKind, StatusCode, TraceFlags, TraceState

from svc.settings import OTEL_SAMPLERS, Settings, SettingsError
from svc.tracing import Parent, Tracing, sampler_of

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
KEPT = f"00-{TRACE}-00f067aa0ba902b7-01"
DROPPED = f"00-{TRACE}-00f067aa0ba902b7-00"


def _tracing(sampler: str, ratio: float = 1.0) -> tuple[Tracing, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    return Tracing(SimpleSpanProcessor(exporter), "test", sampler, ratio), exporter


def test_opentelemetry_variables_choose_the_sampler() -> None:
    settings = Settings.from_env(
        {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1"}
    )
    assert (settings.otel_sampler, settings.otel_sampler_arg) == ("parentbased_traceidratio", 0.1)
    assert Settings().otel_sampler == "parentbased_always_on"
    own = Settings.from_env({"SVC_OTEL_SAMPLER": "always_off", "OTEL_TRACES_SAMPLER": "always_on"})
    assert own.otel_sampler == "always_off"


@pytest.mark.parametrize(
    "env",
    [
        {"OTEL_TRACES_SAMPLER": "sometimes"},
        {"OTEL_TRACES_SAMPLER_ARG": "1.5"},
        {"OTEL_TRACES_SAMPLER_ARG": "a tenth"},
    ],
)
def test_a_sampler_that_cannot_work_is_refused(env: dict[str, str]) -> None:
    with pytest.raises(SettingsError):
        Settings.from_env(env)


@pytest.mark.parametrize("name", OTEL_SAMPLERS)
def test_every_sampler_name_has_a_sampler(name: str) -> None:
    assert sampler_of(name, 0.5).get_description()


def _record(tracing: Tracing, traceparent: str, **fields: Any) -> bool:
    parent = tracing.parent(traceparent)
    if parent is None:
        return False
    return tracing.record("deliver x", SpanKind.CLIENT, parent, time.time_ns(), **fields)


def test_an_attempt_of_a_dropped_trace_makes_no_span() -> None:
    tracing, exporter = _tracing("parentbased_traceidratio", 1.0)
    assert tracing.parent(DROPPED) is None
    assert exporter.get_finished_spans() == ()


def test_an_attempt_of_a_kept_trace_is_a_child_of_its_parent() -> None:
    tracing, exporter = _tracing("parentbased_traceidratio", 0.0)
    parent = tracing.parent(KEPT)
    assert parent is not None
    started = time.time_ns() - 250_000_000  # the attempt began a quarter of a second ago
    attributes = {"svc.attempt": 3}
    assert tracing.record("deliver x", SpanKind.CLIENT, parent, started, attributes, "timeout")
    (finished,) = exporter.get_finished_spans()
    assert finished.context is not None and finished.parent is not None
    assert finished.context.trace_id == int(TRACE, 16)
    assert finished.parent.span_id == 0x00F067AA0BA902B7 and finished.parent.is_remote
    assert finished.start_time == started and finished.end_time is not None
    assert finished.end_time - started >= 250_000_000
    assert finished.attributes == attributes
    assert (finished.status.status_code, finished.status.description) == (
        StatusCode.ERROR,
        "timeout",
    )


def test_a_parent_of_another_version_takes_the_propagators_rules() -> None:
    tracing, exporter = _tracing("parentbased_always_off")
    later = f"01-{TRACE}-00f067aa0ba902b7-01-what-comes-later"
    assert _record(tracing, later)
    (finished,) = exporter.get_finished_spans()
    assert finished.context is not None and finished.context.trace_id == int(TRACE, 16)
    assert finished.status.status_code == StatusCode.UNSET
    # Not a traceparent at all: a new trace, which this sampler drops.
    assert not _record(tracing, "00-nonsense-01")


def test_new_traces_are_kept_at_the_ratio() -> None:
    tracing, exporter = _tracing("parentbased_traceidratio", 0.1)
    kept = sum(_record(tracing, "") for _ in range(2000))
    assert 120 <= kept <= 280
    assert len(exporter.get_finished_spans()) == kept


def test_a_ratio_sampler_decides_by_trace_id() -> None:
    sampler = sampler_of("traceidratio", 0.5)
    low, high = 1, (1 << 64) - 1  # the ratio looks at the low 64 bits
    assert sampler.should_sample(None, low, "x").decision == Decision.RECORD_AND_SAMPLE
    assert sampler.should_sample(None, high, "x").decision == Decision.DROP


def test_off_records_nothing() -> None:
    assert Tracing().parent(KEPT) is None


def test_the_deliveries_of_one_event_read_its_header_once() -> None:
    tracing, _ = _tracing("parentbased_traceidratio", 0.0)
    first = tracing.parent(KEPT)
    assert first is not None and tracing.parent(KEPT) is first  # the same string: kept answer
    copy = "".join(list(KEPT))  # the same text in another string: read again, same trace
    again = tracing.parent(copy)
    assert again is not None and again is not first and again.span == first.span
    assert tracing.parent(DROPPED) is None and tracing.parent(DROPPED) is None
    assert tracing.parent(KEPT) is not None


@pytest.mark.parametrize("flags", ["00", "02", "fe"])
def test_every_flags_byte_with_the_sampled_bit_clear_drops_the_attempt(flags: str) -> None:
    tracing, _ = _tracing("parentbased_always_on")
    assert tracing.parent(f"00-{TRACE}-00f067aa0ba902b7-{flags}") is None
    kept = tracing.parent(f"00-{TRACE}-00f067aa0ba902b7-03")  # sampled, with another bit set
    assert kept is not None and kept.span is not None and kept.span.trace_flags.sampled


def test_a_sampled_parent_keeps_its_trace_state_under_a_parent_based_sampler() -> None:
    tracing, exporter = _tracing("parentbased_always_off")  # drops new traces, never children
    remote = SpanContext(
        int(TRACE, 16), 0x00F067AA0BA902B7, True, TraceFlags(1), TraceState([("vendor", "x")])
    )
    assert tracing.record("deliver x", SpanKind.CLIENT, Parent(remote), time.time_ns())
    (finished,) = exporter.get_finished_spans()
    assert finished.context is not None and finished.context.trace_state.get("vendor") == "x"


def test_a_sampler_that_is_not_parent_based_decides_even_for_a_sampled_parent() -> None:
    tracing, exporter = _tracing("traceidratio", 0.0)  # keeps nothing, whatever the parent
    parent = tracing.parent(KEPT)
    assert parent is not None
    assert not tracing.record("deliver x", SpanKind.CLIENT, parent, time.time_ns())
    assert exporter.get_finished_spans() == ()
    unsampled = tracing.parent(DROPPED)  # not parent-based: an unsampled parent is no verdict
    assert unsampled is not None and not unsampled.span.trace_flags.sampled
    kept, _ = _tracing("traceidratio", 1.0)
    assert kept.record("deliver x", SpanKind.CLIENT, unsampled, time.time_ns())
