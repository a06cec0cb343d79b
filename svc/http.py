"""HTTP plumbing every process shares: the ops app of ``/health``, ``/ready`` and ``/metrics``
on its own port (``SVC_OPS_PORT``, never the API's public one) and serving."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson
from aiohttp import web
from aiohttp.typedefs import LooseHeaders
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from svc import __version__
from svc.context import Context

log = logging.getLogger(__name__)

CONTEXT = web.AppKey("context", Context)


def json_response(
    data: Any, status: int = 200, headers: LooseHeaders | None = None
) -> web.Response:
    """A JSON answer serialised by orjson (aiohttp's ``web.json_response`` uses the standard
    library's ``json``, several times slower on a payment's body)."""
    return web.Response(
        body=orjson.dumps(data),
        status=status,
        headers=headers,
        content_type="application/json",
        charset="utf-8",
    )


async def health(request: web.Request) -> web.Response:
    """Liveness: ``status`` is always ``ok`` while the process serves; no credential needed."""
    return json_response({"status": "ok", "version": __version__})


async def ready(request: web.Request) -> web.Response:
    """200 only when PostgreSQL, Redis and RabbitMQ are reachable and every queue this
    process should consume has a live consumer; the body names each check, and ``warnings``
    what is wrong without making the process unready (``rabbitmq_blocked``)."""
    ctx = request.app[CONTEXT]
    checks = await ctx.readiness()
    ok = all(checks.values())
    body = {"ready": ok, "checks": checks, "warnings": ctx.warnings()}
    return json_response(body, status=200 if ok else 503)


async def metrics(request: web.Request) -> web.Response:
    body = generate_latest(request.app[CONTEXT].metrics.registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def ops_routes() -> list[web.RouteDef]:
    """Liveness, readiness and metrics: what probes and Prometheus read."""
    return [
        web.get("/health", health, allow_head=False),
        web.get("/ready", ready, allow_head=False),
        web.get("/metrics", metrics, allow_head=False),
    ]


def ops_app(ctx: Context) -> web.Application:
    """The app every process serves on its ops port, apart from the API's public routes, so an
    ingress in front of the API never exposes readiness details or metrics."""
    app = web.Application()
    app[CONTEXT] = ctx
    app.add_routes(ops_routes())
    return app


async def serve(
    app: web.Application, host: str, port: int, stop: asyncio.Event, grace: float
) -> None:
    """Serve ``app`` until ``stop``; then stop accepting and give open requests ``grace``."""
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=grace)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    log.info("listening on %s:%d", host, port)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
