"""Client text never forges a log line: a request path holding a newline (percent-encoded in
the request line, decoded by the server) is logged quoted, on one line, wherever the service
logs a request's path."""

from __future__ import annotations

import asyncio
import logging
import time

import aiohttp
import pytest
from yarl import URL

from svc.settings import Settings
from tests.conftest import running_api
from tests.integration.test_request_deadline import over_a_proxied_database

FORGED = "%0A2026-11-27 12:00:00 CRITICAL forged: secret leaked"


def lines_with_path(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The messages of the records that name the forged path."""
    return [r.getMessage() for r in caplog.records if "forged" in r.getMessage()]


def assert_quoted(messages: list[str]) -> None:
    assert messages, "nothing logged the request's path"
    for message in messages:
        assert "\n" not in message and "\r" not in message, message
        assert "\\n2026-11-27" in message, message


async def send_half_a_body(port: int, path: str, key: str) -> None:
    """A form POST announcing more body than it sends, then the connection closed."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
            "Idempotency-Key: half\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            "Content-Length: 1000\r\n\r\namount=2"
        ).encode()
    )
    await writer.drain()
    await asyncio.sleep(0.3)
    writer.close()
    await writer.wait_closed()
    del reader


@pytest.mark.timeout(60)
async def test_the_path_of_a_request_whose_client_left_is_logged_quoted(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with running_api(settings, "quoted", ("api",)) as (_, api):
        await api.call("GET", "/v1/payments")  # the key is known before the body is cut
        path = f"/v1/payments/pay_x{FORGED}/refunds".replace(" ", "%20")
        await send_half_a_body(settings.http_port, path, api.key)
        for _ in range(50):
            if lines_with_path(caplog):
                break
            await asyncio.sleep(0.05)
    assert_quoted(lines_with_path(caplog))


@pytest.mark.timeout(60)
async def test_the_path_of_a_request_past_its_deadline_is_logged_quoted(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with over_a_proxied_database(settings, "deadline") as (proxy, _, api):
        proxy.slow(1.0)  # the key's first look-up outlasts the deadline
        started = time.monotonic()
        path = "/v1/payments" + FORGED.replace(" ", "%20")
        status = await call_raw(settings.http_port, api.key, path)
        proxy.slow(0)
        assert status == 503 and time.monotonic() - started < 2.5
    assert_quoted(lines_with_path(caplog))


async def call_raw(port: int, key: str, path: str) -> int:
    """The status of GET ``path`` sent as written (its percent-encoding kept)."""
    url = URL(f"http://127.0.0.1:{port}{path}", encoded=True)
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, headers={"Authorization": f"Bearer {key}"}) as response,
    ):
        return response.status
