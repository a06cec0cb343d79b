"""A stand-in for an OpenTelemetry collector: takes OTLP/HTTP trace exports, counts, says 200.

The services under test send their spans to ``url`` (as ``OTEL_EXPORTER_OTLP_ENDPOINT``,
uncompressed, the exporters' default); it counts the export requests and the spans in them
and keeps nothing else.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from aiohttp import web
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from harness.ports import free_port

_ANSWER = ExportTraceServiceResponse().SerializeToString()


@dataclass
class Collector:
    """What arrived so far; ``url`` is the base URL to export to."""

    url: str = ""
    requests: int = 0
    spans: int = 0
    refused: int = 0
    """Requests that were not a trace export this stand-in could read (answered 400)."""

    def take(self, body: bytes) -> None:
        """Count the spans of one ``ExportTraceServiceRequest``."""
        export = ExportTraceServiceRequest.FromString(body)
        self.requests += 1
        self.spans += sum(
            len(scope.spans) for resource in export.resource_spans for scope in resource.scope_spans
        )


@asynccontextmanager
async def collecting() -> AsyncIterator[Collector]:
    """A collector stand-in listening on a free port of 127.0.0.1 while the block runs."""
    collector = Collector()

    async def export(request: web.Request) -> web.Response:
        try:
            collector.take(await request.read())
        except DecodeError:
            collector.refused += 1
            raise web.HTTPBadRequest() from None
        return web.Response(body=_ANSWER, content_type="application/x-protobuf")

    app = web.Application(client_max_size=64 * 2**20)
    app.router.add_post("/v1/traces", export)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    collector.url = f"http://127.0.0.1:{port}"
    try:
        yield collector
    finally:
        await runner.cleanup()
