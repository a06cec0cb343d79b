"""The delivery engine: one bound on deliveries in flight whatever their source, senders that
go on while successes are recorded (as many again at most), an attempt recorded in place
while the log is down (and sent once, a copy of its event arriving meanwhile included), and
hand-off only while a delivery waits for its answer."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from harness.ports import free_port
from harness.receivers import Receiver
from harness.servers.proxy import TcpProxy
from svc.amqp.delivery_jobs import DeliveryJob
from svc.amqp.messages import AGAIN
from svc.context import Context
from svc.settings import Settings
from tests.conftest import Api, Running
from tests.integration.test_foreign import Foreign, envelope, org_of

EVENT = "payment.succeeded"


async def counter(ops_url: str, api: Api, name: str) -> float:
    async with api.session.get(ops_url + "/metrics") as response:  # type: ignore[attr-defined]
        text = await response.text()
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    return float(found[1]) if found else 0.0


def stored_event(org: str, event_id: str) -> Foreign:
    """An event as the service's own producers publish it (stored already)."""
    headers = {"svc-org": org, "svc-env": "test", "svc-event-id": event_id, "svc-stored": True}
    return Foreign(event_id, EVENT, headers, envelope(event_id))


@contextlib.asynccontextmanager
async def dispatcher_over_a_proxy(settings: Settings) -> AsyncIterator[tuple[TcpProxy, Running]]:
    """A dispatcher of its own reaching PostgreSQL through a proxy the test controls."""
    host_port = settings.database_url.rsplit("@", 1)[1].split("/", 1)[0]
    host, port = host_port.rsplit(":", 1)
    async with TcpProxy(host, int(port)) as proxy:
        head, tail = settings.database_url.rsplit("@", 1)
        url = f"{head}@127.0.0.1:{proxy.port}/{tail.split('/', 1)[1]}"
        own = dataclasses.replace(
            settings, database_url=url, http_port=free_port(), ops_port=free_port()
        )
        running = Running(own)
        await running.start(("dispatcher",))
        try:
            yield proxy, running
        finally:
            proxy.release()
            await running.close()


@contextlib.asynccontextmanager
async def own_warm_dispatcher(
    service: Running, ctx: Context, settings: Settings, org: str, endpoints: int
) -> AsyncIterator[TcpProxy]:
    """The test's own dispatcher over a proxy, alone consuming (``service``'s closed), its
    endpoint cache loaded by an event delivered to every one of ``endpoints`` and logged."""
    async with dispatcher_over_a_proxy(settings) as (proxy, _running):
        await service.close()
        await stored_event(org, "evt-warm").publish(ctx)
        await eventually(lambda: _recorded(ctx, "evt-warm", endpoints), 10)
        yield proxy


async def publish_copy(ctx: Context, org: str, event_id: str) -> None:
    """The event published again, marked as the outbox sweep marks what it re-publishes."""
    copy = stored_event(org, event_id)
    copy.headers[AGAIN] = True
    await copy.publish(ctx)


async def eventually(check: Callable[[], Awaitable[bool]], seconds: float) -> None:
    """Return once ``check()`` holds; raise TimeoutError after ``seconds``."""
    for _ in range(int(seconds / 0.05)):
        if await check():
            return
        await asyncio.sleep(0.05)
    raise TimeoutError


async def attempts(ctx: Context, event_id: str) -> int:
    found = await ctx.db.fetchval(
        "SELECT count(*) FROM delivery_attempts WHERE event_id = $1", event_id
    )
    return int(found)


@pytest.mark.settings(dispatcher_concurrency=4, handoff_after=0.3)
async def test_one_number_bounds_the_deliveries_in_flight_whatever_their_source(
    service: Running, api: Api, ctx: Context, receiver: Receiver
) -> None:
    endpoint = await api.endpoint(receiver.url("/slow"), [EVENT])
    receiver.delays["/slow"] = 1.0
    org = await org_of(ctx, api)
    for n in range(6):
        await stored_event(org, f"evt-fan-{n}").publish(ctx)
        job = DeliveryJob(
            f"evt-job-{n}", EVENT, org, "test", int(time.time() * 1000), str(endpoint["id"]), b"{}"
        )
        await ctx.channel.default_exchange.publish(
            job.to_message(), routing_key=ctx.topology.deliveries
        )
    most = 0.0

    async def all_arrived() -> bool:
        nonlocal most
        most = max(most, await counter(service.ops_url, api, "svc_deliveries_in_flight"))
        return len(receiver.received) >= 12

    await eventually(all_arrived, 20)
    assert most == 4  # busy, and never more: the HTTP connections are as many
    arrivals = sorted(r.at for r in receiver.received)
    # Each answer takes a second: whatever came within 0.9 s of the first was in flight with it.
    assert sum(1 for at in arrivals if at < arrivals[0] + 0.9) <= 4


@pytest.mark.settings(dispatcher_concurrency=150, endpoint_concurrency=20)
async def test_receivers_that_keep_senders_waiting_get_every_sender_the_bound_allows(
    service: Running, api: Api, ctx: Context, receiver: Receiver
) -> None:
    # 15 endpoints of 20 slots each answer in 2 s: the senders wait, the process idles, and
    # the allowance (64 at first) grows to the bound within a few sweeps.
    for n in range(15):
        await api.endpoint(receiver.url(f"/slow{n}"), [EVENT])
        receiver.delays[f"/slow{n}"] = 2.0
    org = await org_of(ctx, api)
    for n in range(10):
        await stored_event(org, f"evt-wide-{n}").publish(ctx)
    most = 0.0

    async def all_sent() -> bool:
        nonlocal most
        most = max(most, await counter(service.ops_url, api, "svc_deliveries_in_flight"))
        return most == 150

    await eventually(all_sent, 1.9)  # before the first answer frees a sender
    await eventually(lambda: _received(receiver, 150), 20)


async def _received(receiver: Receiver, count: int) -> bool:
    return len(receiver.received) >= count


@pytest.mark.servers
@pytest.mark.settings(dispatcher_concurrency=2)
async def test_senders_go_on_while_successes_are_recorded_as_many_again_at_most(
    service: Running, api: Api, ctx: Context, receiver: Receiver, settings: Settings
) -> None:
    for n in range(6):
        await api.endpoint(receiver.url(f"/r{n}"), [EVENT])
    org = await org_of(ctx, api)
    async with own_warm_dispatcher(service, ctx, settings, org, 6) as proxy:
        receiver.received.clear()
        await proxy.close()  # the delivery log cannot be written
        await stored_event(org, "evt-unlogged").publish(ctx)
        await asyncio.sleep(3)
        # Two senders went on past two successes waiting for the log, then waited themselves.
        assert len(receiver.received) == 4
        await proxy.__aenter__()
        await eventually(lambda: _recorded(ctx, "evt-unlogged", 6), 15)
        await asyncio.sleep(1)
        assert sorted(r.path for r in receiver.received) == [f"/r{n}" for n in range(6)]
        assert await attempts(ctx, "evt-unlogged") == 6


@pytest.mark.servers
async def test_an_attempt_is_recorded_when_the_log_is_back_and_sent_once(
    service: Running, api: Api, ctx: Context, receiver: Receiver, settings: Settings
) -> None:
    await api.endpoint(receiver.url("/r"), [EVENT])
    receiver.delays["/r"] = 0.3
    org = await org_of(ctx, api)
    async with dispatcher_over_a_proxy(settings) as (proxy, _running):
        await service.close()  # the test's own dispatcher alone consumes
        await stored_event(org, "evt-log-down").publish(ctx)
        await eventually(lambda: _arrived(receiver), 10)
        await proxy.close()  # PostgreSQL is gone while the answer comes back
        await asyncio.sleep(3)
        assert await attempts(ctx, "evt-log-down") == 0
        await proxy.__aenter__()  # and back
        await eventually(lambda: _recorded(ctx, "evt-log-down"), 15)
        await asyncio.sleep(2)
        assert await attempts(ctx, "evt-log-down") == 1
        assert [r.path for r in receiver.received] == ["/r"]


@pytest.mark.servers
async def test_a_copy_of_an_event_is_not_sent_while_its_success_waits_for_the_log(
    service: Running, api: Api, ctx: Context, receiver: Receiver, settings: Settings
) -> None:
    """An event published again (the outbox sweep, its publish unconfirmed) reaches the
    dispatcher that delivered it while that success cannot be written yet: the copy is
    skipped on the dispatcher's word, not sent once more after the log is back."""
    await api.endpoint(receiver.url("/r"), [EVENT])
    org = await org_of(ctx, api)
    async with own_warm_dispatcher(service, ctx, settings, org, 1) as proxy:
        await proxy.close()  # the delivery log cannot be written
        await stored_event(org, "evt-copied").publish(ctx)
        await eventually(lambda: _delivered(receiver, "evt-copied", 1), 10)
        await publish_copy(ctx, org, "evt-copied")
        await asyncio.sleep(2)
        await proxy.__aenter__()  # the log is back
        await eventually(lambda: _recorded(ctx, "evt-copied"), 15)
        await asyncio.sleep(3)
        assert await _delivered(receiver, "evt-copied", 2) is False
        assert await attempts(ctx, "evt-copied") == 1


async def test_a_copy_of_an_event_waits_for_the_delivery_under_way_and_is_not_sent(
    service: Running, api: Api, ctx: Context, receiver: Receiver
) -> None:
    """A copy of an event (re-published while the dispatcher still sends the first, its
    engine busy or its receiver slow) comes while nothing is in the log: it waits for the
    delivery under way and is left out once that one is made."""
    await api.endpoint(receiver.url("/r"), [EVENT])
    receiver.delays["/r"] = 0.8  # under the hand-off time: the first stays in flight
    org = await org_of(ctx, api)
    await stored_event(org, "evt-under-way").publish(ctx)
    await eventually(lambda: _arrived(receiver), 10)
    await publish_copy(ctx, org, "evt-under-way")
    await eventually(lambda: _recorded(ctx, "evt-under-way"), 10)
    await asyncio.sleep(2)
    assert receiver._counts == {"/r": 1}
    assert await attempts(ctx, "evt-under-way") == 1


@pytest.mark.servers
@pytest.mark.settings(dispatcher_concurrency=2)
async def test_a_copy_waits_for_a_success_its_sender_writes_itself(
    service: Running, api: Api, ctx: Context, receiver: Receiver, settings: Settings
) -> None:
    """Past as many successes waiting for the log as there are senders, a sender waits for
    its own success to be written; a copy of its event that comes meanwhile is not sent."""
    for n in range(3):
        await api.endpoint(receiver.url(f"/r{n}"), [EVENT])
    org = await org_of(ctx, api)
    async with own_warm_dispatcher(service, ctx, settings, org, 3) as proxy:
        receiver.received.clear()
        await proxy.close()  # the delivery log cannot be written
        await stored_event(org, "evt-own").publish(ctx)
        await eventually(lambda: _delivered(receiver, "evt-own", 3), 10)
        await publish_copy(ctx, org, "evt-own")
        await asyncio.sleep(2)
        await proxy.__aenter__()  # the log is back
        await eventually(lambda: _recorded(ctx, "evt-own", 3), 15)
        await asyncio.sleep(3)
        assert sorted(r.path for r in receiver.received) == ["/r0", "/r1", "/r2"]
        assert await attempts(ctx, "evt-own") == 3


@pytest.mark.servers
@pytest.mark.settings(handoff_after=0.3)
async def test_a_delivery_with_its_answer_is_not_handed_off_while_it_is_recorded(
    service: Running, api: Api, ctx: Context, receiver: Receiver, settings: Settings
) -> None:
    await api.endpoint(receiver.url("/r"), [EVENT])
    org = await org_of(ctx, api)
    async with dispatcher_over_a_proxy(settings) as (proxy, running):
        await service.close()
        proxy.slow(0.5)  # the record takes a second or more: past the hand-off time
        await stored_event(org, "evt-slow-log").publish(ctx)
        await eventually(lambda: _recorded(ctx, "evt-slow-log"), 15)
        assert await counter(running.ops_url, api, "svc_deliveries_handed_off_total") == 0
        assert [r.path for r in receiver.received] == ["/r"]


async def _arrived(receiver: Receiver) -> bool:
    return bool(receiver._counts)  # counted on arrival, before the answer


async def _delivered(receiver: Receiver, event_id: str, count: int) -> bool:
    return sum(r.headers.get("Svc-Event-Id") == event_id for r in receiver.received) >= count


async def _recorded(ctx: Context, event_id: str, count: int = 1) -> bool:
    return await attempts(ctx, event_id) >= count
