"""SVC_DELIVERY_TIMEOUT bounds the whole exchange: connect, send and the capped response head."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from harness.receivers import Receiver, serve_locally
from svc.context import Context
from svc.events.flow import emit
from tests.conftest import Api

NOISE_MS = 250
"""Scheduling noise allowed past the limit on a loaded machine (the suite runs in parallel):
well short of the whole second a deadline rounded up by aiohttp would add. A stall of this
process's event loop (which runs the dispatcher too) is measured and allowed on top: a timer
on a stalled loop fires late through no fault of the deadline."""
LADDER = "30s..60s"  # no retry within a test: each event is tried once


async def _emit(ctx: Context, api: Api) -> str:
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    data = {"id": "pay_t", "status": "succeeded", "amount": 100}
    return (await emit(ctx, scope.org, scope.env, "payment.succeeded", data)).id


@contextlib.asynccontextmanager
async def loop_lag() -> AsyncIterator[list[float]]:
    """``[ms]``: the longest the event loop was late while the block ran (a 10 ms sleep's
    overrun), which is the most a timer due meanwhile can have fired late."""
    worst = [0.0]

    async def probe() -> None:
        loop = asyncio.get_running_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(0.01)
            worst[0] = max(worst[0], (loop.time() - before - 0.01) * 1000)

    task = asyncio.create_task(probe())
    try:
        yield worst
    finally:
        task.cancel()


async def _log(api: Api, endpoint_id: str, count: int, within: float) -> list[dict[str, Any]]:
    """The endpoint's delivery log once it holds ``count`` attempts, oldest first."""
    async with asyncio.timeout(within):
        while True:
            _, body = await api.call("GET", f"/v1/webhook_endpoints/{endpoint_id}/deliveries")
            assert isinstance(body, dict)
            if len(body["data"]) >= count:
                return list(reversed(body["data"]))
            await asyncio.sleep(0.05)


@pytest.mark.settings(delivery_timeout=0.5, retry_ladder=LADDER)
async def test_receiver_that_never_answers_is_a_timeout_at_the_limit(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    receiver.on("/stall", lambda _path, _n: None)
    endpoint = await api.endpoint(receiver.url("/stall"), ["payment.succeeded"])
    await _emit(ctx, api)
    [record] = await _log(api, str(endpoint["id"]), 1, within=10)
    assert record["outcome"] == "timeout" and record["status_code"] is None
    assert 500 <= record["duration_ms"] <= 500 + NOISE_MS


# aiohttp rounds a total timeout above 5 s up to the next whole second, so a deadline set that
# way overruns by up to a second. Two attempts half a second apart cannot both be lucky.
@pytest.mark.timeout(30)
@pytest.mark.settings(delivery_timeout=5.2, retry_ladder=LADDER)
async def test_a_limit_above_five_seconds_is_kept_to_the_millisecond(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    receiver.on("/stall", lambda _path, _n: None)
    endpoint = await api.endpoint(receiver.url("/stall"), ["payment.succeeded"])
    async with loop_lag() as lag:
        await _emit(ctx, api)
        await asyncio.sleep(0.5)
        await _emit(ctx, api)
        records = await _log(api, str(endpoint["id"]), 2, within=15)
    assert [r["outcome"] for r in records] == ["timeout", "timeout"]
    for record in records:
        assert 5200 <= record["duration_ms"] <= 5200 + NOISE_MS + lag[0], (records, lag)


async def _headers_then(request: web.Request, head: bytes, trickle: bool) -> web.StreamResponse:
    """Send the status and headers at once and ``head`` of the body, then trickle or stall."""
    await request.read()
    response = web.StreamResponse(status=200)
    await response.prepare(request)
    with contextlib.suppress(ConnectionResetError):  # the sender hung up: it timed out
        await response.write(head)
        while trickle:
            await asyncio.sleep(0.1)
            await response.write(b".")
        await asyncio.sleep(3600)
    return response


async def trickle(request: web.Request) -> web.StreamResponse:
    return await _headers_then(request, b"ok", trickle=True)


async def long_head(request: web.Request) -> web.StreamResponse:
    return await _headers_then(request, b"x" * 2048, trickle=False)


@pytest.fixture
async def slow_body() -> AsyncIterator[str]:
    """A receiver whose answers start at once but whose bodies do not end."""
    app = web.Application()
    app.router.add_post("/trickle", trickle)
    app.router.add_post("/long-head", long_head)
    runner, port = await serve_locally(app)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@pytest.mark.settings(delivery_timeout=0.5, retry_ladder=LADDER, response_body_limit=1024)
async def test_body_trickled_past_the_limit_is_a_timeout(
    api: Api, ctx: Context, slow_body: str
) -> None:
    endpoint = await api.endpoint(slow_body + "/trickle", ["payment.succeeded"])
    async with loop_lag() as lag:
        await _emit(ctx, api)
        [record] = await _log(api, str(endpoint["id"]), 1, within=10)
    assert record["outcome"] == "timeout" and record["status_code"] is None
    assert 500 <= record["duration_ms"] <= 500 + NOISE_MS + lag[0], (record, lag)


@pytest.mark.settings(delivery_timeout=0.5, retry_ladder=LADDER, response_body_limit=1024)
async def test_only_the_capped_head_is_waited_for(api: Api, ctx: Context, slow_body: str) -> None:
    endpoint = await api.endpoint(slow_body + "/long-head", ["payment.succeeded"])
    await _emit(ctx, api)
    [record] = await _log(api, str(endpoint["id"]), 1, within=10)
    assert record["outcome"] == "success" and record["status_code"] == 200
    assert record["duration_ms"] < 500
    assert record["response_body"] == "x" * 256
