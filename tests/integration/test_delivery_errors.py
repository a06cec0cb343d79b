"""A failed delivery's ``error`` says what failed and where, in words the endpoint's owner can
act on (``connection refused to 127.0.0.1:9``), while ``outcome`` keeps its fixed values."""

from __future__ import annotations

import asyncio
import errno
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import pytest
from aiohttp.client_reqrep import ConnectionKey

from dispatcher.classify import describe, outcome_of_error
from dispatcher.sender import Result, Sender
from harness.ports import free_port
from svc.settings import Settings
from tests.conftest import Api
from tests.integration.test_private_targets import first_delivery
from tests.unit.test_blocked_targets import JOB, _target

KEY = ConnectionKey("hooks.example", 443, True, True, None, None, None)


def _unverified() -> ssl.SSLCertVerificationError:
    error = ssl.SSLCertVerificationError(1, "certificate verify failed: self-signed certificate")
    error.verify_message = "self-signed certificate"
    return error


async def _send(url: str, settings: Settings | None = None) -> Result:
    settings = settings or Settings(allow_private_targets=True)
    async with aiohttp.ClientSession(
        timeout=aiohttp.ClientTimeout(total=settings.delivery_timeout)
    ) as session:
        return await Sender(session, settings).send(await _target(url), JOB)


@asynccontextmanager
async def _server(answer: bool) -> AsyncIterator[int]:
    """A TCP server on a free port that reads the request, then closes the connection at once
    (``answer`` False) or holds it without a word (``answer`` True, for the time-out)."""
    held: list[asyncio.StreamWriter] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        if answer:
            held.append(writer)
            return
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield port
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_a_refused_connection_names_the_address(api: Api) -> None:
    port = free_port()
    endpoint = await api.endpoint(f"http://127.0.0.1:{port}/hooks", ["payment.succeeded"])
    status, _ = await api.call("POST", f"/v1/webhook_endpoints/{endpoint['id']}/test")
    assert status == 202
    record = await first_delivery(api, str(endpoint["id"]))
    assert record["outcome"] == "connect"
    assert record["status_code"] is None
    assert record["error"] == f"connection refused to 127.0.0.1:{port}"


async def test_a_connection_closed_without_an_answer_says_so() -> None:
    async with _server(answer=False) as port:
        result = await _send(f"http://127.0.0.1:{port}/hooks")
    assert result.outcome == "connect"
    assert result.error == f"127.0.0.1:{port} closed the connection without answering"


async def test_a_time_out_names_the_address_and_the_limit() -> None:
    settings = Settings(allow_private_targets=True, delivery_timeout=0.3)
    async with _server(answer=True) as port:
        result = await _send(f"http://127.0.0.1:{port}/hooks", settings)
    assert result.outcome == "timeout"
    assert result.error == f"no answer from 127.0.0.1:{port} within 0.3 s"


async def test_a_refused_private_address_says_why() -> None:
    result = await _send("http://10.0.0.7:8080/hooks", Settings(allow_private_targets=False))
    assert (result.outcome, result.logged_outcome) == ("blocked", "blocked")
    assert result.error == "10.0.0.7 is not a public address: deliveries to it are refused"


@pytest.mark.parametrize(
    ("exc", "outcome", "said"),
    [
        (
            aiohttp.ClientConnectorCertificateError(KEY, _unverified()),
            "tls",
            "TLS with hooks.example:443 failed: self-signed certificate",
        ),
        (
            aiohttp.ClientOSError(errno.ECONNRESET, "Connection reset by peer"),
            "connect",
            "connection reset by hooks.example:443",
        ),
        (
            aiohttp.ClientConnectorError(KEY, OSError(errno.EHOSTUNREACH, "No route to host")),
            "connect",
            "connection to hooks.example:443 failed: no route to host",
        ),
        (aiohttp.ClientPayloadError(), "connect", "the answer of hooks.example:443 was cut off"),
    ],
)
def test_other_failures_are_worded(exc: BaseException, outcome: str, said: str) -> None:
    assert outcome_of_error(exc) == outcome
    assert describe(exc, outcome, "hooks.example", 443, 10.0) == said
