"""A message that comes back never sends what the delivery log says succeeded.

An event redelivered by the broker, published again by the outbox sweep or sent twice by a
producer, and a delivery job redelivered by the broker, each skip the endpoints whose success
for that event is logged (counted in ``svc_deliveries_skipped_total``); an endpoint whose
attempt failed gets the event again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time

import pytest
from aio_pika.abc import AbstractIncomingMessage

from harness.ports import free_port
from harness.receivers import Receiver
from svc.amqp.delivery_jobs import DeliveryJob
from svc.amqp.messages import AGAIN
from svc.context import Context
from svc.events.model import Attempt
from svc.settings import Settings
from tests.conftest import Api, Running
from tests.integration.test_delivery_engine import counter
from tests.integration.test_foreign import Foreign, envelope, org_of

EVENT = "payment.succeeded"


async def skipped(ops_url: str, api: Api, reason: str) -> float:
    return await counter(ops_url, api, f'svc_deliveries_skipped_total{{reason="{reason}"}}')


async def logged_success(ctx: Context, event_id: str, endpoint_id: str) -> None:
    """A success of ``event_id`` at ``endpoint_id`` in the delivery log, as a dispatcher that
    sent it and died before its ack would have left it."""
    now_ms = int(time.time() * 1000)
    attempt = Attempt(
        f"att_{event_id}",
        event_id,
        EVENT,
        endpoint_id,
        1,
        "initial",
        "success",
        204,
        None,
        1.0,
        "",
        now_ms,
        None,
    )
    await ctx.deliveries.record([attempt])


async def taken(ctx: Context, queue_name: str) -> AbstractIncomingMessage:
    """The next message of a queue, taken without an ack."""
    queue = await ctx.channel.get_queue(queue_name)
    for _ in range(200):
        message = await queue.get(no_ack=False, fail=False)
        if message is not None:
            return message
        await asyncio.sleep(0.05)
    raise TimeoutError(f"nothing in {queue_name}")


async def dispatcher(settings: Settings) -> Running:
    """A dispatcher started now, on ports of its own."""
    running = Running(dataclasses.replace(settings, http_port=free_port(), ops_port=free_port()))
    await running.start(("dispatcher",))
    return running


async def settle() -> None:
    await asyncio.sleep(1.5)  # a delivery that should not come would have come by now


def paths(receiver: Receiver) -> list[str]:
    return [r.path for r in receiver.received]


@pytest.mark.roles("api", "scheduler")
async def test_a_redelivered_event_skips_the_endpoints_its_log_has_it_delivered_to(
    service: Running, api: Api, ctx: Context, receiver: Receiver, settings: Settings
) -> None:
    made = await api.endpoint(receiver.url("/made"), [EVENT])
    other = await api.endpoint(receiver.url("/other"), [EVENT])
    assert made["id"] != other["id"]
    org = await org_of(ctx, api)
    headers = {"svc-org": org, "svc-env": "test"}
    await Foreign("evt-back", EVENT, headers, envelope("evt-back")).publish(ctx)
    message = await taken(ctx, ctx.topology.fanout)
    await logged_success(ctx, "evt-back", str(made["id"]))
    await message.nack(requeue=True)  # comes back marked redelivered

    running = await dispatcher(settings)
    try:
        await receiver.wait_for(lambda got: "/other" in [r.path for r in got])
        await settle()
        assert paths(receiver) == ["/other"]
        assert await skipped(running.ops_url, api, "redelivered") == 1
    finally:
        await running.close()


@pytest.mark.roles("api", "scheduler")
async def test_a_redelivered_job_is_skipped_when_its_success_is_logged(
    service: Running, api: Api, ctx: Context, receiver: Receiver, settings: Settings
) -> None:
    made = await api.endpoint(receiver.url("/made"), [EVENT])
    failed = await api.endpoint(receiver.url("/failed"), [EVENT])
    org = await org_of(ctx, api)
    for endpoint in (made, failed):
        job = DeliveryJob(
            "evt-job", EVENT, org, "test", int(time.time() * 1000), str(endpoint["id"]), b"{}"
        )
        await ctx.channel.default_exchange.publish(
            job.to_message(), routing_key=ctx.topology.deliveries
        )
    first = await taken(ctx, ctx.topology.deliveries)
    second = await taken(ctx, ctx.topology.deliveries)
    await logged_success(ctx, "evt-job", str(made["id"]))
    await first.nack(requeue=True)
    await second.nack(requeue=True)

    running = await dispatcher(settings)
    try:
        await receiver.wait_for(lambda got: "/failed" in [r.path for r in got])
        await settle()
        assert paths(receiver) == ["/failed"]  # never logged: sent
        assert await skipped(running.ops_url, api, "redelivered") == 1
    finally:
        await running.close()


@pytest.mark.settings(retry_ladder="60s")
@pytest.mark.parametrize("again", [True, False], ids=["swept", "producer-repeats"])
async def test_an_event_published_again_reaches_only_the_endpoints_it_failed_at(
    service: Running, api: Api, ctx: Context, receiver: Receiver, again: bool
) -> None:
    await api.endpoint(receiver.url("/ok"), [EVENT])
    await api.endpoint(receiver.url("/down"), [EVENT])
    receiver.on("/down", lambda _path, n: 500 if n == 1 else 204)
    org = await org_of(ctx, api)
    event = Foreign("evt-twice", EVENT, {"svc-org": org, "svc-env": "test"}, envelope("evt-twice"))
    await event.publish(ctx)
    await receiver.wait_for(lambda got: sorted(r.path for r in got) == ["/down", "/ok"])
    await asyncio.sleep(0.5)  # both attempts recorded

    if again:
        event.headers[AGAIN] = True  # as the outbox sweep publishes it
    await event.publish(ctx)
    await receiver.wait_for(lambda got: len(got) == 3)
    await settle()
    assert sorted(paths(receiver)) == ["/down", "/down", "/ok"]
    assert await skipped(service.ops_url, api, "republished") == 1
