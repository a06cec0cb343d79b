"""The request deadline cannot be dodged or broken from the outside: ``wait`` is read as ASCII
digits only (another script's digit is a 422 naming it on the long poll and ignored on every
other route, never a 500), only the long poll gets its ``wait`` on top of the deadline, and
only a route that opens a WebSocket outlives it, whatever the request's headers say."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import replace

import aiohttp
import pytest

from svc.settings import Settings
from tests.conftest import Api, running_api
from tests.integration.test_idempotency import post_raw
from tests.integration.test_request_deadline import over_a_proxied_database

OTHER_DIGITS = ["²", "٣", "１", "߁", "➒"]


async def test_wait_of_another_script_is_ignored_where_no_route_reads_it(api: Api) -> None:
    for path in ("/health", "/ready", "/v1/payments", "/nowhere"):
        for wait in OTHER_DIGITS:
            async with api.session.get(path, params={"wait": wait}) as anonymous:
                assert anonymous.status < 500, (path, wait, await anonymous.text())
            status, body = await api.call("GET", path, params={"wait": wait})
            assert status < 500, (path, wait, body)


async def test_wait_of_the_long_poll_is_422_naming_wait_unless_ascii_digits(api: Api) -> None:
    status, payment, _ = await post_raw(api, uuid.uuid4().hex)
    assert status == 201
    for wait in [*OTHER_DIGITS, "1e1", "0x1", "-0.5", " 1", "1_0", "9" * 400]:
        status, body = await api.call("GET", f"/v1/payments/{payment['id']}", params={"wait": wait})
        assert status == 422, (wait, body)
        assert isinstance(body, dict) and [e["field"] for e in body["errors"]] == ["wait"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "headers",
    [{"Upgrade": "websocket"}, {"Upgrade": "WebSocket", "Connection": "Upgrade"}],
    ids=["upgrade", "upgrade-connection"],
)
async def test_an_upgrade_header_does_not_lift_the_deadline_of_a_plain_route(
    settings: Settings, headers: dict[str, str]
) -> None:
    async with over_a_proxied_database(settings, "upgrade") as (proxy, _, api):
        assert (await api.call("GET", "/v1/payments"))[0] == 200  # the key is known
        proxy.slow(1.0)  # every round trip to PostgreSQL now takes two seconds
        started = time.monotonic()
        status, body = await api.call("GET", "/v1/payments", headers=headers)
        took = time.monotonic() - started
        proxy.slow(0)
        assert status == 503, body
        assert isinstance(body, dict) and body["code"] == "service_unavailable"
        assert took < 6.0  # the deadline, and the cancelled query's clean-up over the link


@pytest.mark.timeout(60)
async def test_a_websocket_outlives_the_deadline_and_the_long_poll_gets_its_wait(
    settings: Settings,
) -> None:
    async with running_api(replace(settings, request_timeout=1.0), "socket", ("api",)) as (
        _,
        api,
    ):
        status, payment, _ = await post_raw(api, uuid.uuid4().hex)
        assert status == 201
        path = f"/v1/payments/{payment['id']}"
        async with api.session.ws_connect(path + "/stream", headers=api.headers) as ws:
            first = await ws.receive_json(timeout=5)
            assert first["payment"]["status"] == "pending"
            started = time.monotonic()
            status, polled = await api.call("GET", path, params={"wait": "2"})
            assert status == 200 and time.monotonic() - started >= 1.9, polled
            await asyncio.sleep(0.2)  # the socket is now past its request's deadline
            assert (await api.call("POST", path + "/cancel"))[0] == 200
            changed = await ws.receive_json(timeout=5)
            assert changed["payment"]["status"] == "canceled"
            assert (await ws.receive(timeout=5)).type in (
                aiohttp.WSMsgType.CLOSE,
                aiohttp.WSMsgType.CLOSED,
            )
