"""The dispatcher's pool of connections to RabbitMQ destinations, against the shared broker:
one connection per destination, at most ``limit`` (the one used longest ago and idle closes
for a new one), closed after ``idle`` seconds unused, and a channel the broker closed (no
such exchange) made again for the next publish."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import aio_pika
import pytest
from yarl import URL

from harness.ports import free_port
from svc.amqp.destinations import MAX_CHANNELS, Destinations, Refused
from svc.destinations import Broker
from svc.settings import Settings


def _broker(amqp_url: str, host: str, exchange: str = "amq.topic") -> Broker:
    """The shared broker under another name (``host`` resolves to it below)."""
    url = URL(amqp_url)
    return Broker(host, url.port or 5672, False, url.user, url.password, "/", exchange, None)


async def _loopback(host: str, port: int) -> str:
    return "127.0.0.1"


@pytest.fixture
async def routed(settings: Settings) -> AsyncIterator[str]:
    """A routing key of ``amq.topic`` that a queue takes, so no publish comes back."""
    key = f"svc.pool.{uuid.uuid4().hex}"
    receiver = await aio_pika.connect(settings.amqp_url)
    queue = await (await receiver.channel()).declare_queue(exclusive=True)
    await queue.bind("amq.topic", key)
    yield key
    await receiver.close()


async def test_connections_are_bounded_closed_when_idle_and_channels_remade(
    settings: Settings,
) -> None:
    key = f"svc.pool.{uuid.uuid4().hex}"
    receiver = await aio_pika.connect(settings.amqp_url)
    pool = Destinations(_loopback, limit=2, idle=0.4)
    try:
        channel = await receiver.channel()
        queue = await channel.declare_queue(exclusive=True)
        await queue.bind("amq.topic", key)
        first, second, third = (
            _broker(settings.amqp_url, h) for h in ("a.test", "b.test", "c.test")
        )
        for broker in (first, second, first, third):
            await pool.publish(broker, None, b"{}", {"Svc-Event-Id": "evt_1"}, key, "evt_1")
        assert pool.open == 2  # b.test, used longest ago and idle, made room for c.test
        missing = _broker(settings.amqp_url, "a.test", "svc-no-such-exchange")
        for _ in range(2):  # the broker closed the route's channel: the next one is new
            with pytest.raises(Refused, match="no exchange"):
                await pool.publish(missing, None, b"{}", {}, key, "evt_2")
        await pool.publish(first, None, b"{}", {}, key, "evt_3")
        received = 0
        for _ in range(50):
            while await queue.get(fail=False, no_ack=True) is not None:
                received += 1
            if received == 5:
                break
            await asyncio.sleep(0.05)
        assert received == 5
        await asyncio.sleep(1.0)
        assert pool.open == 0  # idle for longer than 0.4 s
    finally:
        await pool.close()
        await receiver.close()


async def test_destinations_out_of_reach_or_evicted_leave_nothing_behind(
    settings: Settings, routed: str
) -> None:
    """Every destination a process ever tried (an endpoint's broker down for good, one closed
    to make room) must not stay in its pool: over months that is every broker ever named."""
    key = routed
    pool = Destinations(_loopback, limit=1, idle=60)
    nowhere = free_port()
    try:
        for n in range(3):
            down = Broker(f"down{n}.test", nowhere, False, None, None, "/", "amq.topic", None)
            with pytest.raises(ConnectionRefusedError):
                await pool.publish(down, None, b"{}", {}, key, "evt_1")
        assert (pool.open, pool.connecting) == (0, 0)
        for host in ("a.test", "b.test", "c.test"):  # each closes the one before
            await pool.publish(_broker(settings.amqp_url, host), None, b"{}", {}, key, "evt_2")
        assert (pool.open, pool.connecting) == (1, 0)
    finally:
        await pool.close()


async def test_publishes_racing_to_a_new_destination_share_one_connection(
    settings: Settings, routed: str
) -> None:
    """The first publish's connection serves the others, even if the first gives up."""
    key = routed
    pool = Destinations(_loopback, limit=4, idle=60)
    broker = _broker(settings.amqp_url, "a.test")
    try:
        first = asyncio.create_task(pool.publish(broker, None, b"{}", {}, key, "evt_1"))
        await asyncio.sleep(0)  # the first is connecting
        others = [pool.publish(broker, None, b"{}", {}, key, f"evt_{n}") for n in (2, 3)]
        first.cancel()
        await asyncio.gather(*others)
        assert (pool.open, pool.connecting) == (1, 0)
    finally:
        await pool.close()


async def test_a_connection_keeps_at_most_max_channels_the_oldest_idle_closing(
    settings: Settings,
) -> None:
    """One channel per route (exchange and routing key), and past ``MAX_CHANNELS`` the one
    used longest ago closes: routing keys are the receiver's choice, without limit."""
    prefix = f"svc.pool.{uuid.uuid4().hex}"
    receiver = await aio_pika.connect(settings.amqp_url)
    pool = Destinations(_loopback, limit=1, idle=60)
    broker = _broker(settings.amqp_url, "a.test")
    try:
        queue = await (await receiver.channel()).declare_queue(exclusive=True)
        await queue.bind("amq.topic", f"{prefix}.#")
        for n in range(MAX_CHANNELS + 6):
            await pool.publish(broker, None, b"{}", {}, f"{prefix}.{n}", f"evt_{n}")
        assert (pool.open, pool.channels) == (1, MAX_CHANNELS)
        await pool.publish(broker, None, b"{}", {}, f"{prefix}.0", "evt_again")  # remade
        assert pool.channels == MAX_CHANNELS
    finally:
        await pool.close()
        await receiver.close()
