"""Spans reach an OTLP/HTTP collector through either exporter of ``SVC_OTEL_EXPORTER``, and
both send the same spans: names, kinds, parents, attributes, status and resource."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span as Sent
from opentelemetry.proto.trace.v1.trace_pb2 import Status
from opentelemetry.trace import SpanKind

from harness.ports import free_port
from svc.settings import OTEL_EXPORTERS, Settings, SettingsError
from svc.tracing import Tracing, processor_of

PARENT_SPAN = "00f067aa0ba902b7"
KEPT = f"00-4bf92f3577b34da6a3ce929d0e0e4736-{PARENT_SPAN}-01"
DROPPED = f"00-4bf92f3577b34da6a3ce929d0e0e4737-{PARENT_SPAN}-00"


@pytest.fixture
async def collector() -> AsyncIterator[tuple[str, list[ExportTraceServiceRequest]]]:
    """An OTLP/HTTP trace receiver on a free port: its base URL and the requests it took."""
    received: list[ExportTraceServiceRequest] = []

    async def export(request: web.Request) -> web.Response:
        assert request.content_type == "application/x-protobuf"
        received.append(ExportTraceServiceRequest.FromString(await request.read()))
        answer = ExportTraceServiceResponse().SerializeToString()
        return web.Response(body=answer, content_type="application/x-protobuf")

    app = web.Application()
    app.router.add_post("/v1/traces", export)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}/", received
    finally:
        await runner.cleanup()


def _trace(exporter: str, url: str) -> None:
    """A publish span with a child attempt, an attempt of a kept remote trace that failed, and
    one of a dropped trace; then the processor's shutdown, which sends what is queued."""
    tracing = Tracing(processor_of(exporter, url), "dispatcher", "parentbased_always_on")
    with tracing.span("publish payment.created", SpanKind.PRODUCER, None, {"svc.org": "org_1"}):
        child = tracing.traceparent()
    assert child is not None
    for traceparent, ok in ((child, True), (KEPT, False), (DROPPED, True)):
        parent = tracing.parent(traceparent)
        if parent is None:
            continue
        attributes = {"svc.attempt": 2, "http.response.status_code": 200 if ok else 503}
        name = "deliver payment.created"
        error = None if ok else "http_503"
        tracing.record(name, SpanKind.CLIENT, parent, time.time_ns(), attributes, error)
    tracing.shutdown()


def _spans(received: list[ExportTraceServiceRequest]) -> list[dict[str, Any]]:
    """What a collector would show of the spans, without their times and ids: a span's parent
    is named (the publish span, the remote parent or none)."""
    names = {bytes.fromhex(PARENT_SPAN): "remote"}
    spans = []
    for export in received:
        for resource in export.resource_spans:
            service = {a.key: a.value.string_value for a in resource.resource.attributes}
            for scope in resource.scope_spans:
                for span in scope.spans:
                    spans.append(
                        {
                            "service": service["service.name"],
                            "scope": scope.scope.name,
                            "name": span.name,
                            "kind": span.kind,
                            "id": span.span_id,
                            "parent": span.parent_span_id,
                            "attributes": {
                                a.key: a.value.string_value or a.value.int_value
                                for a in span.attributes
                            },
                            "status": (span.status.code, span.status.message),
                            "timed": 0 < span.start_time_unix_nano <= span.end_time_unix_nano,
                        }
                    )
    names.update((s["id"], s["name"]) for s in spans)
    for span in spans:
        del span["id"]
        span["parent"] = names.get(span["parent"]) if span["parent"] else None
    return sorted(spans, key=lambda s: (s["name"], s["parent"] or ""))


@pytest.mark.parametrize("exporter", OTEL_EXPORTERS)
async def test_spans_reach_the_collector(
    exporter: str, collector: tuple[str, list[ExportTraceServiceRequest]]
) -> None:
    url, received = collector
    await asyncio.to_thread(_trace, exporter, url)  # shutdown waits on the collector's answer
    spans = _spans(received)
    assert [(s["name"], s["kind"], s["parent"]) for s in spans] == [
        ("deliver payment.created", Sent.SPAN_KIND_CLIENT, "publish payment.created"),
        ("deliver payment.created", Sent.SPAN_KIND_CLIENT, "remote"),
        ("publish payment.created", Sent.SPAN_KIND_PRODUCER, None),
    ]
    local, remote, publish = spans
    assert publish["attributes"] == {"svc.org": "org_1"}
    assert local["attributes"] == {"svc.attempt": 2, "http.response.status_code": 200}
    assert remote["status"] == (Status.STATUS_CODE_ERROR, "http_503")
    assert all(s["service"] == "dispatcher" and s["scope"] == "svc" and s["timed"] for s in spans)


async def test_both_exporters_send_the_same_spans(
    collector: tuple[str, list[ExportTraceServiceRequest]],
) -> None:
    url, received = collector
    sent = []
    for exporter in OTEL_EXPORTERS:
        received.clear()
        await asyncio.to_thread(_trace, exporter, url)
        sent.append(_spans(received))
    assert sent[0] == sent[1]


def test_the_exporter_is_a_setting() -> None:
    assert Settings().otel_exporter == "native"
    assert Settings.from_env({"SVC_OTEL_EXPORTER": "SDK"}).otel_exporter == "sdk"
    with pytest.raises(SettingsError, match="SVC_OTEL_EXPORTER"):
        Settings.from_env({"SVC_OTEL_EXPORTER": "jaeger"})
