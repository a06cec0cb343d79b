"""Broker flow control on a private RabbitMQ node: under a memory alarm the broker blocks every
connection that publishes. Payments are still answered 201 within a second (their events wait
in the outbox), ``/ready`` and ``svc_amqp_blocked`` say so, a dispatcher whose retry cannot be
published keeps the message it came from unacked, and once the alarm clears every event
reaches every endpoint."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace

import orjson
import pytest

from harness.receivers import Receiver
from harness.servers.rabbitmq import PrivateRabbitMQ, private_rabbitmq
from svc.context import topology_of
from svc.settings import Settings
from tests.conftest import Api, running_api
from tests.integration.test_idempotency import post_raw

BOUND = 1.0
"""Seconds a payment may take while the broker blocks publishing."""


async def timed_payment(api: Api) -> tuple[str, float]:
    started = time.monotonic()
    status, body, _ = await post_raw(api, uuid.uuid4().hex)
    took = time.monotonic() - started
    assert status == 201, body
    return str(body["id"]), took


def paid(receiver: Receiver, path: str) -> set[str]:
    return {orjson.loads(r.body)["data"]["id"] for r in receiver.at(path)}


async def blocked_gauge(api: Api) -> float:
    async with api.session.get(api.ops_url + "/metrics") as response:
        text = await response.text()
    line = next(x for x in text.splitlines() if x.startswith("svc_amqp_blocked "))
    return float(line.split()[1])


async def ready(api: Api) -> tuple[int, dict[str, object]]:
    async with api.session.get(api.ops_url + "/ready") as response:
        return response.status, await response.json()


async def unacked(broker: PrivateRabbitMQ, settings: Settings) -> int:
    """Messages of the fanout and deliveries queues handed to a consumer and not acked."""
    topology = topology_of(settings)
    listed = await broker.ctl("list_queues", "name", "messages_unacknowledged", "--quiet")
    counts = dict(line.split("\t") for line in listed.splitlines() if "\t" in line)
    return sum(int(counts.get(q, 0)) for q in (topology.fanout, topology.deliveries))


async def until(check: Callable[[], Awaitable[bool]], within: float) -> None:
    deadline = time.monotonic() + within
    while not await check():
        assert time.monotonic() < deadline, "not within the time"
        await asyncio.sleep(0.2)


@pytest.mark.servers
@pytest.mark.timeout(90)
async def test_a_memory_alarm_blocks_publishing_but_not_payments(
    settings: Settings, receiver: Receiver
) -> None:
    failing = [False]
    receiver.on("/retried", lambda _path, _n: 503 if failing[0] else 204)
    async with private_rabbitmq() as broker:
        own = replace(settings, amqp_url=broker.url)
        async with running_api(own, "flow") as (ctx, api):
            await api.endpoint(receiver.url("/ok"), ["payment.created"])
            await api.endpoint(receiver.url("/retried"), ["payment.created"])
            failing[0] = True  # every attempt at /retried fails until the alarm is over
            before = [pid for pid, _ in [await timed_payment(api) for _ in range(3)]]
            await receiver.wait_for(lambda _: paid(receiver, "/ok") >= set(before))
            assert await blocked_gauge(api) == 0.0

            await broker.ctl("set_vm_memory_high_watermark", "absolute", "1")
            alarm = time.monotonic()
            during = [await timed_payment(api) for _ in range(15)]
            during += await asyncio.gather(*(timed_payment(api) for _ in range(15)))
            slowest = max(took for _, took in during)
            assert slowest <= BOUND, f"a payment took {slowest:.2f} s under the alarm"
            status, body = await ready(api)
            assert status == 200, body
            assert body["warnings"] == {"rabbitmq_blocked": True}
            assert await blocked_gauge(api) == 1.0
            assert ctx.settings.publish_timeout == 0.5

            # The retries of the events sent before (due after 1 s) fail again and cannot be
            # published: each event holds one message unacked, none is lost to an early ack.
            async def held() -> bool:
                return await unacked(broker, own) == len(before)

            await until(held, 10)
            assert time.monotonic() - alarm < 15
            assert paid(receiver, "/ok").isdisjoint(pid for pid, _ in during)

            await broker.ctl("set_vm_memory_high_watermark", "0.4")
            failing[0] = False
            cleared = time.monotonic()
            everything = set(before) | {pid for pid, _ in during}
            await receiver.wait_for(
                lambda _: (
                    paid(receiver, "/ok") >= everything and paid(receiver, "/retried") >= everything
                ),
                timeout=20,
            )
            drained = time.monotonic() - cleared
            assert drained < 15, f"drained in {drained:.1f} s"
            assert await blocked_gauge(api) == 0.0
            status, body = await ready(api)
            assert status == 200 and body["warnings"] == {"rabbitmq_blocked": False}
