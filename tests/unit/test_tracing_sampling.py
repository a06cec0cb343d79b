"""Which spans the sampler keeps: OpenTelemetry's variables honoured, a delivery attempt of a
dropped trace costing no span, one of a kept trace a child of its parent."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision
from opentelemetry.trace import SpanKind

from svc.settings import OTEL_SAMPLERS, Settings, SettingsError
from svc.tracing import Tracing, sampler_of

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


def test_an_attempt_of_a_dropped_trace_makes_no_span() -> None:
    tracing, exporter = _tracing("parentbased_traceidratio", 1.0)
    assert tracing.start("deliver x", SpanKind.CLIENT, DROPPED) is None
    assert exporter.get_finished_spans() == ()


def test_an_attempt_of_a_kept_trace_is_a_child_of_its_parent() -> None:
    tracing, exporter = _tracing("parentbased_traceidratio", 0.0)
    span = tracing.start("deliver x", SpanKind.CLIENT, KEPT)
    assert span is not None
    span.end()
    (finished,) = exporter.get_finished_spans()
    assert finished.context is not None and finished.parent is not None
    assert finished.context.trace_id == int(TRACE, 16)
    assert finished.parent.span_id == 0x00F067AA0BA902B7 and finished.parent.is_remote


def test_a_parent_of_another_version_takes_the_propagators_rules() -> None:
    tracing, exporter = _tracing("parentbased_always_off")
    later = f"01-{TRACE}-00f067aa0ba902b7-01-what-comes-later"
    span = tracing.start("deliver x", SpanKind.CLIENT, later)
    assert span is not None
    span.end()
    (finished,) = exporter.get_finished_spans()
    assert finished.context is not None and finished.context.trace_id == int(TRACE, 16)
    # Not a traceparent at all: a new trace, which this sampler drops.
    assert tracing.start("deliver x", SpanKind.CLIENT, "00-nonsense-01") is None


def test_new_traces_are_kept_at_the_ratio() -> None:
    tracing, exporter = _tracing("parentbased_traceidratio", 0.1)
    for _ in range(2000):
        span = tracing.start("deliver x", SpanKind.CLIENT, "")
        if span is not None:
            span.end()
    assert 120 <= len(exporter.get_finished_spans()) <= 280


def test_a_ratio_sampler_decides_by_trace_id() -> None:
    sampler = sampler_of("traceidratio", 0.5)
    low, high = 1, (1 << 64) - 1  # the ratio looks at the low 64 bits
    assert sampler.should_sample(None, low, "x").decision == Decision.RECORD_AND_SAMPLE
    assert sampler.should_sample(None, high, "x").decision == Decision.DROP


def test_off_starts_nothing() -> None:
    assert Tracing().start("deliver x", SpanKind.CLIENT, KEPT) is None
