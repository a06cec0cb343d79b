"""The dispatcher refuses a stored URL whose host the API refuses at creation, before any
connection, unless private targets are allowed."""

from __future__ import annotations

from typing import Any, cast

import aiohttp
import pytest

from dispatcher.delivery import Delivery
from dispatcher.endpoints import EndpointCache, Target
from dispatcher.sender import Sender
from svc.amqp.delivery_jobs import DeliveryJob
from svc.settings import Settings
from svc.signing import new_signing_secret
from svc.webhooks.model import Endpoint
from svc.webhooks.store import Endpoints

JOB = Delivery.of_job(DeliveryJob("evt_1", "payment.created", "org_1", "test", 0, "we_1", b"{}"))
BLOCKED = [
    "127.0.0.1",
    "[::1]",
    "localhost",
    "127.1",
    "2130706433",
    "0x7f.1",
    "017700000001",
    "0x7f000001",
]


def result_host(host: str) -> str:
    """The host as a URL holds it: without the brackets of an IPv6 literal."""
    return host.strip("[]")


class OneEndpoint:
    """A store holding one endpoint, written before creation checked its URL."""

    def __init__(self, url: str) -> None:
        self.endpoint = Endpoint(
            "we_1", "org_1", "test", url, ("payment.created",), new_signing_secret(), "", 0
        )

    async def in_scope(self, org: str, env: str) -> list[Endpoint]:
        return [self.endpoint]


class NoConnections:
    """A session that fails the test if anything is sent."""

    def post(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a connection was attempted")


async def _target(url: str) -> Target:
    cache = EndpointCache(cast(Endpoints, OneEndpoint(url)), ttl=60)
    target = await cache.get("org_1", "test", "we_1")
    assert target is not None
    return target


def _sender(allow_private_targets: bool) -> Sender:
    session = cast(aiohttp.ClientSession, NoConnections())
    return Sender(session, Settings(allow_private_targets=allow_private_targets))


@pytest.mark.parametrize("host", BLOCKED)
async def test_stored_private_host_is_blocked_without_a_connection(host: str) -> None:
    result = await _sender(False).send(await _target(f"http://{host}:8080/hook"), JOB)
    assert (result.outcome, result.logged_outcome, result.status_code) == (
        "blocked",
        "blocked",
        None,
    )
    assert (
        result.error == f"{result_host(host)} is not a public address: deliveries to it are refused"
    )


@pytest.mark.parametrize("host", BLOCKED)
async def test_private_host_is_tried_when_allowed(host: str) -> None:
    result = await _sender(True).send(await _target(f"http://{host}:8080/hook"), JOB)
    assert result.outcome == "error"  # NoConnections refused the attempt


@pytest.mark.parametrize("host", ["8.8.8.8", "shop.example", "134744072"])
async def test_public_or_named_host_is_tried(host: str) -> None:
    result = await _sender(False).send(await _target(f"https://{host}/hook"), JOB)
    assert result.outcome == "error"  # NoConnections refused the attempt
