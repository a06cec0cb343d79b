"""Publishing a batch in one write on a real RabbitMQ: every message arrives intact and in
order, the channel's confirm numbering stays in step with single publishes, and a refusal or
a lost channel fails the batch."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import aiormq
import pytest
from pamqp.commands import Basic

from svc.amqp.batch_publish import Outgoing, publish_confirmed


@pytest.fixture
async def channel(service_urls: tuple[str, str]) -> AsyncIterator[aiormq.Channel]:
    connection = await aiormq.connect(service_urls[0])
    channel = await connection.channel(publisher_confirms=True)
    try:
        yield channel
    finally:
        await connection.close()


async def _queue(channel: aiormq.Channel, **arguments: object) -> str:
    name = f"t.bulk.{uuid.uuid4().hex[:12]}"
    await channel.queue_declare(
        name, auto_delete=False, arguments={"x-expires": 60_000, **arguments}
    )
    return name


async def _drain(
    channel: aiormq.Channel, queue: str, count: int
) -> list[aiormq.abc.DeliveredMessage]:
    got = []
    for _ in range(count):
        message = await channel.basic_get(queue, no_ack=True)
        assert message.delivery_tag is not None, "queue emptied early"
        got.append(message)
    return got


def _message(queue: str, index: int, body: bytes) -> Outgoing:
    properties = Basic.Properties(
        delivery_mode=2, message_id=f"m{index}", headers={"svc-index": index}
    )
    return Outgoing(queue, body, properties)


async def test_a_batch_arrives_whole_and_in_order_between_single_publishes(
    channel: aiormq.Channel,
) -> None:
    queue = await _queue(channel)
    await channel.basic_publish(b"before", routing_key=queue)
    big = bytes(range(256)) * 1200  # 300 KB: split into several body frames
    batch = [_message(queue, i, big if i == 3 else f"body {i}".encode()) for i in range(200)]
    await publish_confirmed(channel, "", batch)
    # The channel's numbering is still the broker's: a single publish is confirmed again.
    confirm = await channel.basic_publish(b"after", routing_key=queue)
    assert isinstance(confirm, Basic.Ack)
    assert not channel.confirmations

    got = await _drain(channel, queue, 202)
    assert got[0].body == b"before" and got[-1].body == b"after"
    for index, message in enumerate(got[1:-1]):
        assert message.header.properties.message_id == f"m{index}"
        assert message.header.properties.headers == {"svc-index": index}
        assert message.header.properties.delivery_mode == 2
        assert message.body == (big if index == 3 else f"body {index}".encode())


async def test_a_refused_message_fails_the_batch_and_the_channel_carries_on(
    channel: aiormq.Channel,
) -> None:
    queue = await _queue(channel, **{"x-max-length": 3, "x-overflow": "reject-publish"})
    batch = [_message(queue, i, b"x") for i in range(10)]
    with pytest.raises(aiormq.exceptions.DeliveryError):
        await publish_confirmed(channel, "", batch)
    await asyncio.sleep(0.2)  # the remaining confirms arrive and are dropped quietly
    assert not channel.confirmations
    await channel.queue_purge(queue)
    confirm = await channel.basic_publish(b"after", routing_key=queue)
    assert isinstance(confirm, Basic.Ack)


async def test_a_lost_channel_fails_the_batch(channel: aiormq.Channel) -> None:
    batch = [_message("anything", i, b"x") for i in range(5)]
    with pytest.raises(aiormq.exceptions.AMQPError):
        # An exchange that does not exist: the broker closes the channel (404).
        await asyncio.wait_for(publish_confirmed(channel, f"missing.{uuid.uuid4().hex}", batch), 10)
    assert channel.is_closed


async def test_a_channel_without_confirms_is_refused(service_urls: tuple[str, str]) -> None:
    connection = await aiormq.connect(service_urls[0])
    try:
        plain = await connection.channel(publisher_confirms=False)
        with pytest.raises(ValueError, match="confirm mode"):
            await publish_confirmed(plain, "", [_message("q", 0, b"x")])
    finally:
        await connection.close()


@pytest.mark.parametrize("raises", [True, False])
async def test_a_message_no_queue_takes_comes_back_as_an_error(
    service_urls: tuple[str, str], raises: bool
) -> None:
    connection = await aiormq.connect(service_urls[0])
    try:
        channel = await connection.channel(publisher_confirms=True, on_return_raises=raises)
        queue = await _queue(channel)
        batch = [_message(queue, 0, b"kept"), _message(f"{queue}.missing", 1, b"lost")]
        with pytest.raises(aiormq.exceptions.PublishError):
            await publish_confirmed(channel, "", batch)
        await asyncio.sleep(0.2)
        assert not channel.confirmations and not channel.message_id_delivery_tag
        assert [m.body for m in await _drain(channel, queue, 1)] == [b"kept"]
        confirm = await channel.basic_publish(b"after", routing_key=queue)
        assert isinstance(confirm, Basic.Ack)
    finally:
        await connection.close()


async def test_a_message_without_an_id_is_refused(channel: aiormq.Channel) -> None:
    with pytest.raises(ValueError, match="message_id"):
        await publish_confirmed(channel, "", [Outgoing("q", b"x", Basic.Properties())])
    assert channel.delivery_tag == 0 and not channel.confirmations
