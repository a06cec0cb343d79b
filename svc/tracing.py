"""OpenTelemetry traces of the API request, the publish and each delivery attempt.

Off unless ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set: then spans go to that collector over OTLP
(HTTP), and the trace context crosses RabbitMQ in a W3C ``traceparent`` header of the event
message and of every delivery job made from it, so one trace shows a payment request, its
event's publish and every attempt to deliver it. Off, the hot path pays one branch.

Spans are batched, encoded and sent by native code on a thread that never holds the
interpreter's lock (``fastotel``); with ``SVC_OTEL_EXPORTER=sdk``, by OpenTelemetry's own batch
processor and exporter, which encode each span in Python on a thread that competes with the
event loop for that lock (tens of microseconds per span in a dispatcher). Both send the
same spans.

Which traces are kept is the sampler's choice (``SVC_OTEL_SAMPLER`` or OpenTelemetry's
``OTEL_TRACES_SAMPLER``, with its ratio in ``..._ARG``), by default every trace whose parent
was kept, and every new one. A parent-based sampler follows the ``traceparent`` it continues,
so a trace is kept or dropped whole across the API, the broker and the dispatchers; an attempt
whose parent was dropped costs a look at the header's flags and nothing else.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context as TraceContext
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    DEFAULT_OFF,
    DEFAULT_ON,
    Decision,
    ParentBasedTraceIdRatio,
    Sampler,
    TraceIdRatioBased,
)
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import (
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
)
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from svc import __version__
from svc.settings import Settings

TRACEPARENT = "traceparent"
SCOPE = "svc"
"""The instrumentation scope of every span of the service."""
_PROPAGATOR = TraceContextTextMapPropagator()
# What the propagator accepts of version 00 (other versions, and zero ids, take its own path).
_VERSION_00 = re.compile(r"00-(?!0{32})([0-9a-f]{32})-(?!0{16})([0-9a-f]{16})-([0-9a-f]{2})")
DEFAULT_SAMPLER = "parentbased_always_on"


class _Resource(Resource):
    """A resource whose hash is worked out once: the OTLP exporter looks up every span it
    sends by its resource, and ``Resource.__hash__`` writes the attributes out as JSON each
    time (about 3 µs a span)."""

    def __init__(self, attributes: Any, schema_url: str | None = None) -> None:
        super().__init__(attributes, schema_url)
        self._hash = super().__hash__()

    def __hash__(self) -> int:
        return self._hash


@dataclass(frozen=True, slots=True)
class Parent:
    """The trace a span recorded later belongs to: a remote parent's span context, or None
    for a new trace."""

    span: SpanContext | None


_NEW_TRACE = Parent(None)
_UNSAMPLED = frozenset("02468ace")
"""The last character of a version-00 ``traceparent`` whose sampled flag (bit 0) is clear."""
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_UNSET = Status(StatusCode.UNSET)


class Tracing:
    """Spans of one process, or nothing when ``processor`` is None; ``sampler`` is one of
    ``svc.settings.OTEL_SAMPLERS`` (``ratio``: the share the ``traceidratio`` ones keep)."""

    def __init__(
        self,
        processor: SpanProcessor | None = None,
        role: str = "svc",
        sampler: str = DEFAULT_SAMPLER,
        ratio: float = 1.0,
    ) -> None:
        self.enabled = processor is not None
        self._follows_parent = sampler.startswith("parentbased_")
        """A parent that was not sampled is not sampled here either (each parent-based
        sampler of ``sampler_of`` drops such a child)."""
        self._provider: TracerProvider | None = None
        self._tracer: trace.Tracer = trace.NoOpTracer()
        made = Resource.create({"service.name": role, "service.version": __version__})
        self._resource = _Resource(made.attributes, made.schema_url)
        self._sampler = sampler_of(sampler, ratio)
        self._processor = processor or SpanProcessor()  # the base class does nothing
        self._ids = RandomIdGenerator()
        self._scope = InstrumentationScope(SCOPE)
        self._last_parent: tuple[str | None, Parent | None] = (None, None)
        if processor is not None:
            # The sampler is given, never left to the SDK: it would read the environment.
            self._provider = TracerProvider(resource=self._resource, sampler=self._sampler)
            self._provider.add_span_processor(processor)
            self._tracer = self._provider.get_tracer(SCOPE)

    @classmethod
    def of(cls, settings: Settings, role: str) -> Tracing:
        """As ``settings`` say: spans to their collector with their sampler, or off."""
        if not settings.otel_endpoint:
            return cls()
        processor = processor_of(settings.otel_exporter, settings.otel_endpoint)
        return cls(processor, role, settings.otel_sampler, settings.otel_sampler_arg)

    @contextlib.contextmanager
    def span(
        self,
        name: str,
        kind: SpanKind,
        parent: str | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> Iterator[Span | None]:
        """The current span while the block runs (None when tracing is off), child of a
        ``traceparent`` value when given. Made even when not sampled: what runs inside
        passes its trace on (``traceparent``), flagged not sampled."""
        if not self.enabled:
            yield None
            return
        context = _extract(parent) if parent else None
        with self._tracer.start_as_current_span(
            name, context=context, kind=kind, attributes=attributes
        ) as span:
            yield span

    def parent(self, traceparent: str) -> Parent | None:
        """What a span recorded later continues: the trace of a ``traceparent`` value, or a
        new one when it is empty; None when tracing is off or a parent-based sampler drops it,
        read from the header's flags with no context built (the span of an attempt of a trace
        left out costs that look and nothing else). The deliveries of one event share their
        header's string, and start one after another: the last answer is kept for it."""
        last, answer = self._last_parent
        if traceparent is last:
            return answer
        answer = self._parent(traceparent)
        self._last_parent = (traceparent, answer)
        return answer

    def _parent(self, traceparent: str) -> Parent | None:
        if not self.enabled:
            return None
        if not traceparent:
            return _NEW_TRACE
        value = traceparent.strip(" \t")
        found = _VERSION_00.fullmatch(value)
        if found is None:  # another version, or not one: the propagator's own rules
            remote = trace.get_current_span(_extract(traceparent)).get_span_context()
            return Parent(remote) if remote.is_valid else _NEW_TRACE
        if self._follows_parent and value[-1] in _UNSAMPLED:  # nine in ten, at 10 %
            return None
        flags = TraceFlags(int(found[3], 16))
        return Parent(SpanContext(int(found[1], 16), int(found[2], 16), True, flags))

    def record(
        self,
        name: str,
        kind: SpanKind,
        parent: Parent,
        started_ns: int,
        attributes: Mapping[str, str | int] | None = None,
        error: str | None = None,
    ) -> bool:
        """Record a span of ``parent`` that started at ``started_ns`` (``time.time_ns()``) and
        ends now, with ``attributes`` and, when ``error`` is given, an error status saying it;
        whether the sampler kept it.

        For a leaf of a trace, such as a delivery attempt, whose context goes nowhere: nothing
        of the span lives while the work waits, and once it is done the sampler decides and the
        finished span goes straight to the span processor, as the SDK's span would on its end,
        without the SDK's live span (its lock, its attribute checks, start and end hooks). The
        attributes are the caller's, strings and integers. This costs a dispatcher about half
        of what the SDK's span does (whose code runs cold, once per ten deliveries at one
        trace in ten)."""
        remote = parent.span
        if remote is not None and remote.trace_flags.sampled and self._follows_parent:
            # What every parent-based sampler answers for a sampled remote parent: kept,
            # with the parent's trace state; asking it would cost a few microseconds a span.
            trace_id = remote.trace_id
            trace_state: TraceState | None = remote.trace_state
        else:
            trace_id = self._ids.generate_trace_id() if remote is None else remote.trace_id
            inside = None if remote is None else trace.set_span_in_context(NonRecordingSpan(remote))
            decided = self._sampler.should_sample(inside, trace_id, name, kind, attributes)
            if decided.decision != Decision.RECORD_AND_SAMPLE:
                return False
            trace_state = decided.trace_state
        own = SpanContext(trace_id, self._ids.generate_span_id(), False, _SAMPLED, trace_state)
        span = ReadableSpan(
            name,
            own,
            remote,
            self._resource,
            attributes,
            kind=kind,
            status=_UNSET if error is None else Status(StatusCode.ERROR, error),
            start_time=started_ns,
            end_time=time.time_ns(),
            instrumentation_scope=self._scope,
        )
        self._processor.on_end(span)
        return True

    def traceparent(self) -> str | None:
        """The current span's ``traceparent`` value, to send along; None when there is none."""
        if not self.enabled:
            return None
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier)
        return carrier.get(TRACEPARENT)

    def shutdown(self) -> None:
        """Export what is buffered and stop."""
        if self._provider is not None:
            self._provider.shutdown()


def processor_of(exporter: str, endpoint: str) -> SpanProcessor:
    """What batches spans and sends them to the OTLP/HTTP collector at ``endpoint`` (its base
    URL), by ``exporter``, one of ``svc.settings.OTEL_EXPORTERS``. Both read OpenTelemetry's
    ``OTEL_BSP_*`` and ``OTEL_EXPORTER_OTLP_*`` variables (headers, timeout, compression, TLS)
    and send the same requests."""
    url = endpoint.rstrip("/") + "/v1/traces"
    if exporter == "sdk":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return BatchSpanProcessor(OTLPSpanExporter(endpoint=url))
    from fastotel import OTLPSpanProcessor

    return OTLPSpanProcessor(endpoint=url)


def sampler_of(name: str, ratio: float = 1.0) -> Sampler:
    """The sampler of one of ``svc.settings.OTEL_SAMPLERS``; ``ratio`` is the share of new
    traces the ``traceidratio`` ones keep."""
    if name == "traceidratio":
        return TraceIdRatioBased(ratio)
    if name == "parentbased_traceidratio":
        return ParentBasedTraceIdRatio(ratio)
    samplers: dict[str, Sampler] = {
        "always_on": ALWAYS_ON,
        "always_off": ALWAYS_OFF,
        "parentbased_always_on": DEFAULT_ON,
        "parentbased_always_off": DEFAULT_OFF,
    }
    return samplers[name]


def _extract(traceparent: str) -> TraceContext:
    return _PROPAGATOR.extract({TRACEPARENT: traceparent})
