"""SVC_AMQP_URL with several nodes: a process starts on the first node that answers and, when
its node goes away, moves to the next by itself, losing no event. The nodes are two proxies in
front of the test broker, so closing one looks to the service like its node dying."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from urllib.parse import urlsplit

import pytest

from harness.cleanup import delete_namespace
from harness.ports import free_port
from harness.receivers import Receiver
from harness.servers.proxy import TcpProxy
from svc.settings import Settings
from tests.conftest import Api, running_api
from tests.integration.test_durability import create_payments, created_ids


def via(url: str, port: int) -> str:
    parts = urlsplit(url)
    return parts._replace(netloc=f"{parts.netloc.rsplit('@', 1)[0]}@127.0.0.1:{port}").geturl()


async def wait_ready(api: Api, within: float) -> float:
    """Seconds until ``/ready`` answered 200."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    while True:
        async with api.session.get(api.ops_url + "/ready") as response:
            if response.status == 200:
                return loop.time() - started
        assert loop.time() - started < within, await response.text()
        await asyncio.sleep(0.1)


@pytest.mark.servers
@pytest.mark.timeout(120)
async def test_roles_move_to_the_next_node_when_theirs_goes_away(
    settings: Settings, receiver: Receiver
) -> None:
    broker = urlsplit(settings.amqp_url)
    assert broker.hostname is not None and broker.port is not None
    nowhere = via(settings.amqp_url, free_port())  # a node that is down at start-up
    async with (
        TcpProxy(broker.hostname, broker.port) as first,
        TcpProxy(broker.hostname, broker.port) as second,
    ):
        urls = [nowhere, via(settings.amqp_url, first.port), via(settings.amqp_url, second.port)]
        own = replace(settings, amqp_url=",".join(urls), publish_timeout=1.0)
        try:
            async with running_api(own, "nodes") as (_, api):
                assert first.accepted > 0 and second.accepted == 0
                await api.endpoint(receiver.url("/nodes"), ["payment.created"])
                before = await create_payments(api, 5)
                await receiver.wait_for(lambda r: created_ids(receiver) >= set(before))

                await first.close()  # every connection through it drops; it takes no more
                await asyncio.sleep(0.3)
                assert await wait_ready(api, 15) < 10
                during = await create_payments(api, 5)
                assert second.accepted > 0
                await receiver.wait_for(
                    lambda r: created_ids(receiver) >= set(before + during), timeout=20
                )
        finally:
            await delete_namespace(settings)
