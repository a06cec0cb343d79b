"""A server span per API request, continuing a caller's W3C ``traceparent`` when sent."""

from __future__ import annotations

from aiohttp import web
from opentelemetry.trace import SpanKind, StatusCode

from api.problems import Handler
from svc.http import CONTEXT
from svc.tracing import TRACEPARENT


@web.middleware
async def tracing_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    tracing = request.app[CONTEXT].tracing
    if not tracing.enabled:
        return await handler(request)
    resource = request.match_info.route.resource
    route = resource.canonical if resource is not None else "unmatched"
    parent = request.headers.get(TRACEPARENT)
    # Made even when not sampled: the event's publish passes the trace on, flagged dropped.
    with tracing.span(f"{request.method} {route}", SpanKind.SERVER, parent) as span:
        assert span is not None
        if not span.is_recording():
            return await handler(request)
        span.set_attributes({"http.request.method": request.method, "http.route": route})
        try:
            response = await handler(request)
        except web.HTTPException as exc:
            span.set_attribute("http.response.status_code", exc.status)
            raise
        span.set_attribute("http.response.status_code", response.status)
        if response.status >= 500:
            span.set_status(StatusCode.ERROR)
        return response
