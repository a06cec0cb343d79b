"""Request counts and durations by route template, for Prometheus."""

from __future__ import annotations

import time

from aiohttp import web

from api.problems import Handler
from svc.http import CONTEXT


@web.middleware
async def metrics_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Count and time requests by route template (never the raw path, which holds ids)."""
    started = time.perf_counter()
    status = 500
    try:
        response = await handler(request)
        status = response.status
        return response
    finally:
        resource = request.match_info.route.resource
        route = resource.canonical if resource is not None else "unmatched"
        metrics = request.app[CONTEXT].metrics
        metrics.http_requests.labels(route, request.method, str(status)).inc()
        metrics.http_duration.labels(route).observe(time.perf_counter() - started)
