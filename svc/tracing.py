"""OpenTelemetry traces of the API request, the publish and each delivery attempt.

Off unless ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set: then spans go to that collector over OTLP
(HTTP), and the trace context crosses RabbitMQ in a W3C ``traceparent`` header of the event
message and of every delivery job made from it, so one trace shows a payment request, its
event's publish and every attempt to deliver it. Off, the hot path pays one branch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context as TraceContext
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from svc import __version__

TRACEPARENT = "traceparent"
_PROPAGATOR = TraceContextTextMapPropagator()


class Tracing:
    """Spans of one process, or nothing when ``processor`` is None."""

    def __init__(self, processor: SpanProcessor | None = None, role: str = "svc") -> None:
        self.enabled = processor is not None
        self._provider: TracerProvider | None = None
        self._tracer: trace.Tracer = trace.NoOpTracer()
        if processor is not None:
            resource = Resource.create({"service.name": role, "service.version": __version__})
            self._provider = TracerProvider(resource=resource)
            self._provider.add_span_processor(processor)
            self._tracer = self._provider.get_tracer("svc")

    @classmethod
    def to_collector(cls, endpoint: str, role: str) -> Tracing:
        """Spans batched to an OTLP/HTTP collector at ``endpoint`` (its base URL)."""
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces")
        return cls(BatchSpanProcessor(exporter), role)

    @contextlib.contextmanager
    def span(
        self,
        name: str,
        kind: SpanKind,
        parent: str | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> Iterator[Span | None]:
        """A span (None when tracing is off), child of a ``traceparent`` value when given."""
        if not self.enabled:
            yield None
            return
        context = _extract(parent) if parent else None
        with self._tracer.start_as_current_span(
            name, context=context, kind=kind, attributes=attributes
        ) as span:
            yield span

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


def _extract(traceparent: str) -> TraceContext:
    return _PROPAGATOR.extract({TRACEPARENT: traceparent})
