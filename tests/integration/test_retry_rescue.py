"""Retries lost in the broker are queued again from the delivery log: a failed latest attempt
whose next attempt is overdue by more than SVC_RETRY_RESCUE_AFTER, and nothing else."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import replace

import orjson
import pytest

from harness.database import create_migrated
from harness.receivers import Receiver
from harness.servers.postgres import private_postgres
from scheduler.rescue import Rescuer
from svc.amqp.delivery_jobs import DeliveryJob
from svc.context import Context, open_context
from svc.envelope import Event, new_event
from svc.events.model import Attempt
from svc.ids import new_id
from svc.settings import Settings
from svc.webhooks import flow
from tests.conftest import Api

pytestmark = [
    pytest.mark.roles("api", "dispatcher"),
    pytest.mark.settings(retry_ladder="1s..1h", retry_rescue_after=1.0),
]
MINUTE = 60_000


def now_ms() -> int:
    return int(time.time() * 1000)


async def stored_event(ctx: Context, org: str, at_ms: int) -> Event:
    event = new_event("payment.succeeded", "test", {"id": new_id("pay"), "status": "succeeded"})
    event = replace(event, created_ms=at_ms)
    async with ctx.unit() as unit:
        await ctx.events.insert(unit, event, org, outbox=False)
    return event


def attempt(
    event: Event, endpoint_id: str, number: int, at_ms: int, next_ms: int | None, ok: bool = False
) -> Attempt:
    trigger = "initial" if number == 1 else "retry"
    outcome, status = ("success", 204) if ok else ("http_error", 503)
    return Attempt(
        new_id("att"), event.id, event.type, endpoint_id, number, trigger, outcome, status,
        None, 5.0, "", at_ms, next_ms,
    )  # fmt: skip


async def test_only_overdue_failed_latest_attempts_are_queued_again(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    ids = {}
    for name in ("lost", "late", "done", "later", "exhausted", "off", "ordered"):
        ids[name] = str((await api.endpoint(receiver.url(f"/{name}"), ["payment.succeeded"]))["id"])
    await ctx.endpoints.update(ctx.db, scope, ids["off"], {"disabled": True}, now_ms())
    await ctx.endpoints.update(ctx.db, scope, ids["ordered"], {"ordered": True}, now_ms())
    start = now_ms() - 20 * MINUTE
    event = await stored_event(ctx, scope.org, start)
    due = now_ms() - 10 * MINUTE  # long overdue
    rows = [
        attempt(event, ids["lost"], 1, start, start + 1000),
        attempt(event, ids["lost"], 2, start + 1000, due),
        attempt(event, ids["late"], 1, start, now_ms() + MINUTE),  # not overdue (yet)
        attempt(event, ids["done"], 1, start, start + 1000),
        attempt(event, ids["done"], 2, start + 1000, None, ok=True),
        attempt(event, ids["later"], 1, start, due),
        attempt(event, ids["later"], 2, due + 1000, now_ms() + MINUTE),  # the retry did run
        attempt(event, ids["exhausted"], 1, start, None),
        attempt(event, ids["off"], 1, start, due),
        attempt(event, ids["ordered"], 1, start, due),
    ]
    await ctx.deliveries.record(rows)

    assert await Rescuer(ctx).sweep() == 1
    [got] = await receiver.wait_for(lambda r: len(r) >= 1, timeout=10)
    assert got.path == "/lost" and orjson.loads(got.body)["id"] == event.id
    for _ in range(100):
        logged, _ = await ctx.deliveries.for_endpoint(ids["lost"], 10, None)
        if len(logged) == 3:
            break
        await asyncio.sleep(0.05)
    newest = logged[0]
    assert (newest["attempt"], newest["trigger"], newest["outcome"]) == (3, "retry", "success")

    # Once the attempt is logged the pair is delivered: another scheduler finds nothing.
    assert await Rescuer(ctx).sweep() == 0
    await asyncio.sleep(0.5)
    assert [r.path for r in receiver.received] == ["/lost"]


async def test_a_stand_in_does_nothing_when_the_late_original_was_logged(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    endpoint_id = str((await api.endpoint(receiver.url("/hook"), ["payment.succeeded"]))["id"])
    start = now_ms() - 20 * MINUTE
    event = await stored_event(ctx, scope.org, start)
    await ctx.deliveries.record([attempt(event, endpoint_id, 1, start, now_ms() - 10 * MINUTE)])
    [lost] = await ctx.deliveries.overdue(ctx.db, (0, ""), now_ms(), 10)
    job = await Rescuer(ctx).stand_in(lost)
    assert job is not None and job.handed_off
    assert (job.attempt, job.trigger, job.first_attempt_ms) == (2, "retry", start)
    assert job.not_before_ms >= now_ms() + 500  # it waits one more rescue age first
    assert job.step == ctx.settings.retry_ladder.step_after(1)
    # The original retry turns up and is logged before the stand-in's turn.
    await ctx.deliveries.record([attempt(event, endpoint_id, 2, now_ms(), None, ok=True)])
    await ctx.channel.default_exchange.publish(job.to_message(), ctx.topology.deliveries)
    await asyncio.sleep(1.0)
    assert receiver.received == []


async def test_a_late_retry_checks_the_log_first(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    """The original of a rescued retry, should it turn up after the stand-in made the attempt,
    does nothing; a late retry whose attempt nobody made is sent."""
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    endpoint_id = str((await api.endpoint(receiver.url("/late"), ["payment.succeeded"]))["id"])
    start = now_ms() - 20 * MINUTE
    made, missing = [await stored_event(ctx, scope.org, start) for _ in range(2)]
    due = now_ms() - 10 * MINUTE
    for event in (made, missing):
        await ctx.deliveries.record([attempt(event, endpoint_id, 1, start, due)])
    await ctx.deliveries.record([attempt(made, endpoint_id, 2, due + 5, None, ok=True)])
    for event in (made, missing):
        job = DeliveryJob.of(event, scope.org, endpoint_id).retried(start, 1, due_ms=due)
        await ctx.channel.default_exchange.publish(job.to_message(), ctx.topology.deliveries)
    [got] = await receiver.wait_for(lambda r: len(r) >= 1, timeout=10)
    assert orjson.loads(got.body)["id"] == missing.id
    await asyncio.sleep(0.5)
    assert len(receiver.received) == 1


async def test_a_retry_whose_event_reached_its_endpoint_meanwhile_is_skipped(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    """An event fanned out twice (a publish confirmed too late and sent again, a fan-out the
    broker redelivered) has two retry chains at a failing endpoint: once one of them has
    delivered it, the other's next retry, on time, is skipped, not sent again.
    A retry of an event the endpoint has not had yet is sent."""
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    endpoint_id = str((await api.endpoint(receiver.url("/chains"), ["payment.succeeded"]))["id"])
    start = now_ms() - MINUTE
    delivered, pending = [await stored_event(ctx, scope.org, start) for _ in range(2)]
    for event in (delivered, pending):
        await ctx.deliveries.record([attempt(event, endpoint_id, 1, start, now_ms())])
    second = start + 5000  # the other chain of ``delivered`` got through
    await ctx.deliveries.record([attempt(delivered, endpoint_id, 1, second, None, ok=True)])
    for event in (delivered, pending):
        job = DeliveryJob.of(event, scope.org, endpoint_id).retried(start, 1, due_ms=now_ms())
        await ctx.channel.default_exchange.publish(job.to_message(), ctx.topology.deliveries)
    [got] = await receiver.wait_for(lambda r: len(r) >= 1, timeout=10)
    assert orjson.loads(got.body)["id"] == pending.id
    await asyncio.sleep(0.5)
    assert len(receiver.received) == 1


async def test_a_stand_in_for_an_event_fanned_out_twice_is_sent(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    """An event fanned out twice (its publish re-sent by the outbox sweep) has two retry
    chains at a failing endpoint, numbered alike. Both lost: the stand-in for the latest
    attempt is sent, although the other chain made an attempt of that number long before."""
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    endpoint_id = str((await api.endpoint(receiver.url("/twice"), ["payment.succeeded"]))["id"])
    start = now_ms() - 20 * MINUTE
    event = await stored_event(ctx, scope.org, start)
    second = start + 9000  # the second fan-out's first attempt
    await ctx.deliveries.record(
        [
            attempt(event, endpoint_id, 1, start, start + 1000),
            attempt(event, endpoint_id, 2, start + 1000, start + 3000),
            attempt(event, endpoint_id, 3, start + 3000, start + 8000),
            attempt(event, endpoint_id, 4, start + 8000, start + 13000),  # lost
            attempt(event, endpoint_id, 1, second, second + 1000),
            attempt(event, endpoint_id, 2, second + 1000, second + 3000),
            attempt(event, endpoint_id, 3, second + 3000, now_ms() - 10 * MINUTE),  # lost
        ]
    )
    assert await Rescuer(ctx).sweep() == 1  # the latest attempt of the pair
    [got] = await receiver.wait_for(lambda r: len(r) >= 1, timeout=10)
    assert orjson.loads(got.body)["id"] == event.id
    for _ in range(100):
        logged, _ = await ctx.deliveries.for_endpoint(endpoint_id, 10, None)
        if len(logged) == 8:
            break
        await asyncio.sleep(0.05)
    assert (logged[0]["attempt"], logged[0]["outcome"]) == (4, "success")


@pytest.mark.roles("api")
async def test_a_lost_stand_in_is_queued_again_two_rescue_ages_later(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    """No dispatcher runs, so the stand-in makes no attempt, as if a node stopping lost it:
    the rescuer queues another one two rescue ages later, and stops once an attempt
    follows."""
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    endpoint_id = str((await api.endpoint(receiver.url("/again"), ["payment.succeeded"]))["id"])
    start = now_ms() - 20 * MINUTE
    event = await stored_event(ctx, scope.org, start)
    await ctx.deliveries.record([attempt(event, endpoint_id, 1, start, now_ms() - 10 * MINUTE)])
    rescuer = Rescuer(ctx)
    assert await rescuer.sweep() == 1
    assert await rescuer.sweep() == 0  # its stand-in has not had its two rescue ages yet
    await asyncio.sleep(2 * ctx.settings.retry_rescue_after + 0.1)
    assert await rescuer.sweep() == 1  # still the latest attempt: another stand-in
    await ctx.deliveries.record([attempt(event, endpoint_id, 2, now_ms(), None, ok=True)])
    await asyncio.sleep(2 * ctx.settings.retry_rescue_after + 0.1)
    assert await rescuer.sweep() == 0  # followed by an attempt: nothing more to do
    queue = await ctx.channel.get_queue(ctx.topology.deliveries, ensure=False)
    assert (await queue.declare()).message_count == 2  # both stand-ins, past their wait


def test_the_ladder_position_after_failures() -> None:
    from svc.ladder import RetryLadder

    ladder = RetryLadder.parse("1s,2s,5s..1m,10m..1h")
    # 1 s, then 2 s, then every 5 s (position 2) for the first minute, then every 10 m (position 3).
    assert [ladder.step_after(n) for n in range(5)] == [0, 1, 2, 2, 2]
    assert ladder.step_after(30) == 3


@pytest.mark.servers
@pytest.mark.timeout(120)
async def test_after_a_database_outage_the_rescue_waits_a_rescue_age(settings: Settings) -> None:
    """Retries that fell due while PostgreSQL was down are late, not lost: the rescue lets
    them run for one rescue age before it queues stand-ins."""
    with private_postgres() as server:
        url = await create_migrated(server.admin_url)
        own = replace(settings, database_url=url, retry_rescue_after=5.0)
        async with open_context(own) as ctx:
            _, scope = await ctx.api_keys.create("test", "outage")
            async with ctx.unit() as unit:
                endpoint = await flow.create(
                    ctx, unit, scope, "https://hooks.example.com/x", ["payment.succeeded"], ""
                )
            start = now_ms() - 20 * MINUTE
            event = await stored_event(ctx, scope.org, start)
            failed = attempt(event, endpoint.id, 1, start, now_ms() - 10 * MINUTE)
            await ctx.deliveries.record([failed])
            rescuer = Rescuer(ctx)

            await asyncio.to_thread(server.stop)
            with pytest.raises(Exception):  # noqa: B017 (whatever asyncpg raises for a lost server)
                await rescuer.sweep()
            await asyncio.to_thread(server.start)
            assert await rescuer.sweep() == 0  # held: the database was away
            found = 0
            for _ in range(60):  # once the hold is over (and the pool has reconnected)
                await asyncio.sleep(0.5)
                with contextlib.suppress(Exception):
                    if found := await rescuer.sweep():
                        break
            assert found == 1
