"""A request's deadline (``SVC_REQUEST_TIMEOUT``): over a PostgreSQL link that became slow a
payment creation is answered 503 with ``Retry-After`` once the deadline passes, not left
hanging, and the retry with the same key makes one payment once the link is fast again; a long
poll gets its wait on top of the deadline. PostgreSQL is reached through a proxy that adds
latency."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from harness.servers.proxy import TcpProxy
from svc.context import Context
from svc.settings import Settings
from tests.conftest import Api, running_api
from tests.integration.test_idempotency import post_raw


def _via(url: str, port: int) -> str:
    head, tail = url.rsplit("@", 1)
    return f"{head}@127.0.0.1:{port}/{tail.split('/', 1)[1]}"


@contextlib.asynccontextmanager
async def over_a_proxied_database(
    settings: Settings, org: str
) -> AsyncIterator[tuple[TcpProxy, Context, Api]]:
    """The API alone on ``settings`` with a one-second request deadline, reaching PostgreSQL
    through a proxy that can be made slow, and a test key of ``org``."""
    host_port = settings.database_url.rsplit("@", 1)[1].split("/", 1)[0]
    host, port = host_port.rsplit(":", 1)
    async with TcpProxy(host, int(port)) as proxy:
        own = replace(
            settings, database_url=_via(settings.database_url, proxy.port), request_timeout=1.0
        )
        async with running_api(own, org, ("api",)) as (ctx, api):
            yield proxy, ctx, api


@pytest.mark.servers
@pytest.mark.timeout(90)
async def test_a_payment_over_a_slow_database_is_503_at_the_deadline_then_made_once(
    settings: Settings,
) -> None:
    async with over_a_proxied_database(settings, "slow") as (proxy, ctx, api):
        key = uuid.uuid4().hex
        proxy.slow(0.5)  # every round trip to PostgreSQL now takes a second
        started = time.monotonic()
        status, body, headers = await post_raw(api, key)
        took = time.monotonic() - started
        assert status == 503, body
        assert body["code"] == "service_unavailable"
        assert headers["Retry-After"] == "2"
        assert 1.0 <= took < 4.0

        proxy.slow(0)
        for _ in range(50):
            status, body, _ = await post_raw(api, key)
            if status != 503:
                break
            await asyncio.sleep(0.2)
        assert status == 201, body
        again = await post_raw(api, key)
        assert again[0] == 201 and again[1]["id"] == body["id"]
        org = await ctx.db.fetchval("SELECT org_id FROM payments WHERE id = $1", body["id"])
        count = await ctx.db.fetchval("SELECT count(*) FROM payments WHERE org_id = $1", org)
        assert count == 1


@pytest.mark.timeout(60)
async def test_a_long_poll_waits_past_the_deadline(settings: Settings) -> None:
    async with running_api(replace(settings, request_timeout=1.0), "poll", ("api",)) as (_, api):
        status, body, _ = await post_raw(api, uuid.uuid4().hex)
        assert status == 201
        started = time.monotonic()
        status, polled = await api.call("GET", f"/v1/payments/{body['id']}?wait=2")
        assert status == 200, polled
        assert time.monotonic() - started >= 1.9  # still pending: it waited the whole 2 s


def test_settings_read_the_request_timeout() -> None:
    assert Settings().request_timeout == 8.0
    assert Settings.from_env({"SVC_REQUEST_TIMEOUT": "2500ms"}).request_timeout == 2.5
    with pytest.raises(ValueError, match="SVC_REQUEST_TIMEOUT"):
        Settings.from_env({"SVC_REQUEST_TIMEOUT": "0"})
