"""Publishes of concurrent callers share one write (``svc.amqp.publishing.Coalesced``) and
each caller is told about its own message only: one no queue takes, or one the broker
refuses, fails that caller's publish and no other's."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import aio_pika
import aiormq
import pytest
from pamqp.commands import Basic

from svc.amqp.batch_publish import Outgoing
from svc.amqp.publishing import Coalesced


@pytest.fixture
async def channel(service_urls: tuple[str, str]) -> AsyncIterator[aio_pika.abc.AbstractChannel]:
    connection = await aio_pika.connect(service_urls[0])
    try:
        yield await connection.channel(publisher_confirms=True, on_return_raises=True)
    finally:
        await connection.close()


def _message(key: str, index: int) -> Outgoing:
    properties = Basic.Properties(delivery_mode=2, message_id=f"m{index}-{uuid.uuid4().hex}")
    return Outgoing(key, f"body {index}".encode(), properties)


async def test_each_caller_is_told_about_its_own_message(
    channel: aio_pika.abc.AbstractChannel,
) -> None:
    exchange = await channel.declare_exchange(f"t.co.{uuid.uuid4().hex[:8]}", auto_delete=True)
    queue = await channel.declare_queue(exclusive=True)
    await queue.bind(exchange, "kept")
    full = await channel.declare_queue(
        exclusive=True, arguments={"x-max-length": 1, "x-overflow": "reject-publish"}
    )
    await full.bind(exchange, "full")
    coalesced = Coalesced(channel, exchange.name)
    keys = ["kept"] * 10 + ["nowhere"] + ["kept"] * 10 + ["full", "full"]
    outcomes = await asyncio.gather(
        *(coalesced.publish(_message(key, i)) for i, key in enumerate(keys)),
        return_exceptions=True,
    )
    assert outcomes[:10] == [None] * 10 and outcomes[11:21] == [None] * 10
    assert isinstance(outcomes[10], aiormq.exceptions.PublishError)  # returned: no queue
    assert outcomes[21] is None and isinstance(outcomes[22], aiormq.exceptions.DeliveryError)
    got = []
    while (message := await queue.get(fail=False, no_ack=True)) is not None:
        got.append(message.body)
    assert got == [f"body {i}".encode() for i, key in enumerate(keys) if key == "kept"]
    await coalesced.publish(_message("kept", 99))  # the channel carries on
