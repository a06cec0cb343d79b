"""Automatic disabling of endpoints that fail for SVC_ENDPOINT_DISABLE_AFTER, turning them
on again, and the bulk recover of what an endpoint missed."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import orjson
import pytest

from harness.receivers import Receiver
from scheduler.endpoint_health import disable_failing
from svc.amqp.commands import Resend
from svc.context import Context
from svc.db.times import to_dt
from svc.envelope import Event, iso_ms, new_event
from svc.events.model import Attempt
from svc.ids import new_id
from svc.webhooks import flow
from tests.conftest import Api

HOOK = "https://hooks.example.com/svc"
MINUTE = 60_000
HOUR = 60 * MINUTE


def now_ms() -> int:
    return int(time.time() * 1000)


def attempt(
    event: Event,
    endpoint_id: object,
    at_ms: int,
    outcome: str = "http_error",
    next_ms: int | None = None,
    trigger: str = "initial",
) -> Attempt:
    status = 204 if outcome == "success" else 503
    return Attempt(
        new_id("att"), event.id, event.type, str(endpoint_id), 1, trigger, outcome,
        status, None, 12.0, "", at_ms, next_ms,
    )  # fmt: skip


async def stored_event(
    ctx: Context, org: str, created_ms: int, kind: str = "payment.created"
) -> Event:
    """An event stored without publishing it (as if its deliveries happened long ago)."""
    event = replace(new_event(kind, "test", {"id": new_id("pay")}), created_ms=created_ms)
    async with ctx.unit() as unit:
        await ctx.events.insert(unit, event, org, outbox=False)
    return event


async def backdate(ctx: Context, created_ms: int) -> None:
    await ctx.db.execute("UPDATE webhook_endpoints SET created_at = $1", to_dt(created_ms))


async def org_of(ctx: Context, api: Api) -> str:
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    return scope.org


@pytest.mark.settings(endpoint_disable_after=3600.0)
async def test_an_endpoint_failing_for_the_whole_window_is_disabled_then_turned_on(
    api: Api, ctx: Context, notices: asyncio.Queue[object]
) -> None:
    org = await org_of(ctx, api)
    names = ("dead", "healthy", "recent", "quiet")
    ids = {
        name: (await api.endpoint(f"{HOOK}/{name}", ["payment.created"]))["id"] for name in names
    }
    now = now_ms()
    await backdate(ctx, now - 20 * HOUR)
    event = await stored_event(ctx, org, now - 20 * HOUR)
    failures = {  # minutes ago (negative: a success)
        "dead": [180, 120, 30, 5],  # failing for three hours: disabled
        "healthy": [180, -20, 5],  # a success within the hour
        "recent": [-120, 50, 10],  # failing for 50 minutes only
        "quiet": [180, 120],  # failing, but no attempt within the hour
    }
    await ctx.deliveries.record(
        [
            attempt(event, ids[name], now - abs(ago) * MINUTE, "success" if ago < 0 else "timeout")
            for name, agos in failures.items()
            for ago in agos
        ]
    )
    while not notices.empty():
        notices.get_nowait()

    # Two schedulers at once: the endpoint is disabled, counted and announced once.
    assert sorted(await asyncio.gather(disable_failing(ctx), disable_failing(ctx))) == [0, 1]
    assert ctx.metrics.registry.get_sample_value("svc_endpoints_disabled_total") == 1.0
    async with asyncio.timeout(1):
        assert await notices.get() == [org, "test"]
    views = {}
    for name in names:
        _, views[name] = await api.call("GET", f"/v1/webhook_endpoints/{ids[name]}")
    assert {name: (v["disabled"], v["disabled_reason"]) for name, v in views.items()} == {  # type: ignore[index]
        "dead": (True, "failing"),
        "healthy": (False, None),
        "recent": (False, None),
        "quiet": (False, None),
    }
    stored = await ctx.endpoints.load(str(ids["dead"]))
    assert stored is not None and stored.disabled and stored.disabled_reason == "failing"
    assert str(ids["dead"]) in [e.id for e in await ctx.endpoints.in_scope(org, "test")]
    assert str(ids["dead"]) not in await ctx.endpoints.subscribers(org, "test", "payment.created")
    assert await disable_failing(ctx) == 0

    status, view = await api.call(
        "PATCH", f"/v1/webhook_endpoints/{ids['dead']}", json={"disabled": False}
    )
    assert status == 200 and isinstance(view, dict)
    assert (view["disabled"], view["disabled_reason"]) == (False, None)
    async with asyncio.timeout(1):
        assert await notices.get() == [org, "test"]
    # Failures are counted afresh from now: the old streak does not disable it again.
    assert await disable_failing(ctx) == 0
    assert await disable_failing(ctx, now_ms() + 2 * HOUR) == 0  # no attempt since
    assert ctx.metrics.registry.get_sample_value("svc_endpoints_disabled_total") == 1.0


async def test_recover_resends_what_the_endpoint_missed_to_it_alone(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    org = await org_of(ctx, api)
    events = ["payment.created", "payment.succeeded"]
    target = (await api.endpoint(receiver.url("/target"), events))["id"]
    other = (await api.endpoint(receiver.url("/other"), events))["id"]
    since = now_ms() - 30 * MINUTE
    await backdate(ctx, since - HOUR)
    at = {k: since + k * MINUTE for k in range(-40, 15)}
    old_retrying = await stored_event(ctx, org, at[-40])
    before = await stored_event(ctx, org, at[-20])
    exhausted = await stored_event(ctx, org, at[1])
    delivered = await stored_event(ctx, org, at[2])
    recovered = await stored_event(ctx, org, at[3])
    failed_again = await stored_event(ctx, org, at[4])
    unsent = await stored_event(ctx, org, at[5])  # stored while the endpoint was disabled
    other_test = await stored_event(ctx, org, at[6], "payment.succeeded")
    unsubscribed = await stored_event(ctx, org, at[7], "refund.failed")
    await ctx.deliveries.record(
        [
            attempt(before, target, at[-10], "connect"),
            attempt(old_retrying, target, at[9], "http_error", next_ms=at[14]),
            attempt(exhausted, target, at[2], "timeout", next_ms=at[3]),
            attempt(exhausted, target, at[3], "timeout"),
            attempt(delivered, target, at[3], "success"),
            attempt(recovered, target, at[4], "http_error", next_ms=at[6]),
            attempt(recovered, target, at[6], "success"),
            attempt(failed_again, target, at[5], "success"),
            attempt(failed_again, target, at[8], "http_error", trigger="resend"),
            attempt(unsent, other, at[5], "success"),
            attempt(other_test, other, at[6], "success", trigger="test"),
        ]
    )
    path = f"/v1/webhook_endpoints/{target}/recover"
    status, answer = await api.call("POST", path, json={"since": iso_ms(since)})
    assert status == 202, answer
    assert answer == {"endpoint_id": target, "events": 4, "has_more": False, "status": "scheduled"}
    expected = {old_retrying.id, exhausted.id, failed_again.id, unsent.id}
    await receiver.wait_for(lambda r: len(r) >= 4)
    await asyncio.sleep(0.3)
    assert [r.path for r in receiver.received] == ["/target"] * 4
    assert {orjson.loads(r.body)["id"] for r in receiver.received} == expected
    assert unsubscribed.id not in expected
    for _ in range(50):  # progress shows in the delivery log, as resends
        _, log = await api.call("GET", f"/v1/webhook_endpoints/{target}/deliveries?limit=100")
        resends = [a for a in log["data"] if a["outcome"] == "success" and a["trigger"] == "resend"]  # type: ignore[index]
        if len(resends) == 4:
            break
        await asyncio.sleep(0.05)
    assert {a["event_id"] for a in resends} == expected


@pytest.mark.roles("api")  # no scheduler: the staged resends wait in the commands queue
async def test_recover_stages_resends_oldest_first_bounded_and_once_per_key(
    api: Api, ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    org = await org_of(ctx, api)
    endpoint_id = (await api.endpoint(HOOK, ["payment.created"]))["id"]
    since = now_ms() - HOUR
    await backdate(ctx, since - HOUR)
    events = [await stored_event(ctx, org, since + k * MINUTE) for k in (5, 1, 4, 2, 3)]
    await ctx.deliveries.record([attempt(e, endpoint_id, since + 10 * MINUTE) for e in events])
    oldest_first = [e.id for e in sorted(events, key=lambda e: e.created_ms)]
    path = f"/v1/webhook_endpoints/{endpoint_id}/recover"

    monkeypatch.setattr(flow, "RECOVER_LIMIT", 3)
    key = {"Idempotency-Key": "recover-1"}
    _, first = await api.call("POST", path, json={"since": iso_ms(since)}, headers=key)
    _, again = await api.call("POST", path, json={"since": iso_ms(since)}, headers=key)
    assert first == again
    assert isinstance(first, dict) and (first["events"], first["has_more"]) == (3, True)
    assert await staged_resends(ctx) == [(e, "resend", endpoint_id) for e in oldest_first[:3]]
    assert await ctx.db.fetchval("SELECT count(*) FROM command_outbox") == 0

    monkeypatch.setattr(flow, "RECOVER_LIMIT", 10)
    _, whole = await api.call("POST", path, json={"since": iso_ms(since)})
    assert isinstance(whole, dict) and (whole["events"], whole["has_more"]) == (5, False)
    assert [event_id for event_id, _, _ in await staged_resends(ctx)] == oldest_first


async def staged_resends(ctx: Context) -> list[tuple[str, str, str | None]]:
    channel = await ctx.connection.channel()
    try:
        queue = await channel.get_queue(ctx.topology.commands, ensure=False)
        found = []
        while (message := await queue.get(no_ack=True, fail=False)) is not None:
            command = Resend.from_body(message.body)
            found.append((command.event_id, command.trigger, command.endpoint_id))
        return found
    finally:
        await channel.close()


@pytest.mark.roles("api")
async def test_recover_problems(api: Api) -> None:
    endpoint_id = (await api.endpoint(HOOK, ["payment.created"]))["id"]
    path = f"/v1/webhook_endpoints/{endpoint_id}/recover"
    cases: list[tuple[object, str, str]] = [
        ({}, "since", "required"),
        ({"since": 5}, "since", "invalid_type"),
        ({"since": "yesterday"}, "since", "invalid_time"),
        ({"since": "2026-11-21T08:00:00"}, "since", "invalid_time"),  # no offset
        ({"since": "2026-11-21T08:00:00Z", "until": "x"}, "until", "unknown_field"),
    ]
    for body, field, code in cases:
        status, problem = await api.call("POST", path, json=body)
        assert status == 422 and isinstance(problem, dict), body
        assert [(e["field"], e["code"]) for e in problem["errors"]] == [(field, code)]
    status, answer = await api.call("POST", path, json={"since": "0001-01-01T00:00:00+01:00"})
    assert status == 202 and isinstance(answer, dict) and answer["events"] == 0
    await api.call("PATCH", f"/v1/webhook_endpoints/{endpoint_id}", json={"disabled": True})
    status, problem = await api.call("POST", path, json={"since": "2026-11-21T08:00:00Z"})
    assert status == 409 and isinstance(problem, dict) and problem["code"] == "endpoint_disabled"
