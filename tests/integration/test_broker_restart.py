"""A broker restart stops nothing for good: every role consumes again by itself, payments
taken during the outage succeed and their events are delivered once it is back."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from harness.receivers import Receiver
from harness.servers.rabbitmq import private_rabbitmq
from svc.settings import Settings
from tests.conftest import Api, running_api
from tests.integration.test_durability import create_payments, created_ids


async def ready(api: Api) -> tuple[int, dict[str, object]]:
    async with api.session.get(api.ops_url + "/ready") as response:
        return response.status, await response.json()


@pytest.mark.servers
@pytest.mark.timeout(150)
async def test_consumers_come_back_after_a_broker_restart(
    settings: Settings, receiver: Receiver
) -> None:
    async with private_rabbitmq() as broker:
        own = replace(settings, amqp_url=broker.url, publish_timeout=1.0)
        async with running_api(own, "restart") as (_, api):
            await api.endpoint(receiver.url("/restart"), ["payment.created"])
            before = await create_payments(api, 5)
            await receiver.wait_for(lambda r: created_ids(receiver) >= set(before))

            await broker.stop_app()
            during = await create_payments(api, 5)  # committed: 201 whatever the publish
            status, body = await ready(api)
            assert status == 503 and body["checks"]["consumers"] is False  # type: ignore[index]

            await broker.start_app()
            restarted = asyncio.get_running_loop().time()
            for _ in range(150):
                status, body = await ready(api)
                if status == 200:
                    break
                await asyncio.sleep(0.1)
            assert status == 200, body
            assert asyncio.get_running_loop().time() - restarted < 15
            after = await create_payments(api, 5)
            await receiver.wait_for(
                lambda r: created_ids(receiver) >= set(before + during + after), timeout=30
            )
