"""The dispatcher's pool of connections to RabbitMQ destinations, against the shared broker:
one connection per destination, at most ``limit`` (the one used longest ago and idle closes
for a new one), closed after ``idle`` seconds unused, and a channel the broker closed (no
such exchange) made again for the next publish."""

from __future__ import annotations

import asyncio
import uuid

import aio_pika
import pytest
from yarl import URL

from svc.amqp.destinations import Destinations, Refused
from svc.destinations import Broker
from svc.settings import Settings


def _broker(amqp_url: str, host: str, exchange: str = "amq.topic") -> Broker:
    """The shared broker under another name (``host`` resolves to it below)."""
    url = URL(amqp_url)
    return Broker(host, url.port or 5672, False, url.user, url.password, "/", exchange, None)


async def _loopback(host: str, port: int) -> str:
    return "127.0.0.1"


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
