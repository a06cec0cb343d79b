"""A stand-in for an OpenTelemetry collector: takes OTLP/HTTP trace exports, counts, says 200.

The services under test send their spans to ``url`` (as ``OTEL_EXPORTER_OTLP_ENDPOINT``); it
counts the export requests, the spans in them and the traces they belong to, and keeps
nothing else.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from aiohttp import web
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from harness.ports import free_port

PROTOBUF = "application/x-protobuf"
_ANSWER = ExportTraceServiceResponse().SerializeToString()


@dataclass
class Collector:
    """What arrived so far; ``url`` is the base URL to export to."""

    url: str = ""
    requests: int = 0
    spans: int = 0
    traces: set[bytes] = field(default_factory=set)
    refused: int = 0
    """Requests that were not a trace export this stand-in could read (answered 400)."""

    def counts(self) -> dict[str, int]:
        return {"requests": self.requests, "spans": self.spans, "traces": len(self.traces)}

    def take(self, body: bytes) -> None:
        """Count the spans of one ``ExportTraceServiceRequest``."""
        export = ExportTraceServiceRequest.FromString(body)
        self.requests += 1
        for resource in export.resource_spans:
            for scope in resource.scope_spans:
                self.spans += len(scope.spans)
                self.traces.update(span.trace_id for span in scope.spans)


def decoded(body: bytes, encoding: str) -> bytes:
    """The body of a request sent with ``Content-Encoding: encoding`` (gzip, deflate or none)."""
    if encoding == "gzip":
        return gzip.decompress(body)
    if encoding == "deflate":
        return zlib.decompress(body)
    return body


@asynccontextmanager
async def collecting(host: str = "127.0.0.1") -> AsyncIterator[Collector]:
    """A collector stand-in listening on a free port of ``host`` while the block runs."""
    collector = Collector()

    async def export(request: web.Request) -> web.Response:
        body = await request.read()
        try:
            collector.take(decoded(body, request.headers.get("Content-Encoding", "")))
        except (DecodeError, OSError, zlib.error):  # gzip raises OSError (BadGzipFile)
            collector.refused += 1
            raise web.HTTPBadRequest() from None
        return web.Response(body=_ANSWER, content_type=PROTOBUF)

    app = web.Application(client_max_size=64 * 2**20)
    app.router.add_post("/v1/traces", export)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, host, port).start()
    collector.url = f"http://{host}:{port}"
    try:
        yield collector
    finally:
        await runner.cleanup()
