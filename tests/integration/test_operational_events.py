"""Operational events: an endpoint failing (once per episode), disabled (by the health check
or by hand) and enabled, and an event whose retries ran out, each stored with the change it
tells of and delivered to the scope's subscribed endpoints, never to the endpoint it is
about."""

from __future__ import annotations

import time
from typing import Any

import orjson
import pytest

from harness.receivers import Receiver
from scheduler.endpoint_health import check_health
from svc.context import Context
from svc.db.times import to_dt
from svc.envelope import new_event
from svc.events.model import Attempt
from svc.ids import new_id
from svc.notices.flow import record_attempts
from tests.conftest import Api

HOOK = "https://hooks.example.com/svc"
MINUTE = 60_000
HOUR = 60 * MINUTE
OPERATIONAL = [
    "webhook_endpoint.failing",
    "webhook_endpoint.disabled",
    "webhook_endpoint.enabled",
    "delivery.exhausted",
]


def now_ms() -> int:
    return int(time.time() * 1000)


async def org_of(ctx: Context, api: Api) -> str:
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    return scope.org


async def told(ctx: Context, org: str, kind: str) -> list[dict[str, Any]]:
    """The data of ``org``'s stored events of ``kind``, oldest first."""
    rows = await ctx.db.fetch(
        "SELECT body FROM events WHERE org_id = $1 AND type = $2 ORDER BY created_at, id",
        org,
        kind,
    )
    return [orjson.loads(row["body"])["data"] for row in rows]


def attempt(
    endpoint_id: str, at_ms: int, outcome: str = "timeout", next_ms: int | None = 1
) -> Attempt:
    event = new_event("payment.created", "test", {"id": new_id("pay")})
    status = 204 if outcome == "success" else None
    return Attempt(
        new_id("att"), event.id, event.type, endpoint_id, 1, "initial", outcome, status, None,
        12.0, "", at_ms, None if next_ms is None else at_ms + MINUTE,
    )  # fmt: skip


@pytest.mark.settings(endpoint_failing_after=3600.0, endpoint_disable_after=6 * 3600.0)
async def test_failing_once_per_episode_then_disabled_then_enabled(api: Api, ctx: Context) -> None:
    org = await org_of(ctx, api)
    dead = str((await api.endpoint(f"{HOOK}/dead", ["payment.created"]))["id"])
    healthy = str((await api.endpoint(f"{HOOK}/healthy", ["payment.created"]))["id"])
    now = now_ms()
    await ctx.db.execute("UPDATE webhook_endpoints SET created_at = $1", to_dt(now - 20 * HOUR))
    await ctx.deliveries.record(
        [
            attempt(dead, now - 2 * HOUR),
            attempt(dead, now - 5 * MINUTE),
            attempt(healthy, now - 2 * HOUR),
            attempt(healthy, now - 10 * MINUTE, "success"),
        ]
    )

    await check_health(ctx, now)
    await check_health(ctx, now + MINUTE)  # the same episode: told once
    failing = await told(ctx, org, "webhook_endpoint.failing")
    assert [(d["endpoint_id"], d["url"]) for d in failing] == [(dead, f"{HOOK}/dead")]
    assert set(failing[0]) == {"endpoint_id", "url", "failing_since"}

    # A success ends the episode; failing again later is a new one, told again.
    await ctx.deliveries.record([attempt(dead, now + 2 * MINUTE, "success")])
    await check_health(ctx, now + 3 * MINUTE)
    assert len(await told(ctx, org, "webhook_endpoint.failing")) == 1
    await ctx.deliveries.record([attempt(dead, now + 4 * MINUTE), attempt(dead, now + 2 * HOUR)])
    await check_health(ctx, now + 2 * HOUR)
    assert len(await told(ctx, org, "webhook_endpoint.failing")) == 2

    # Failing for the whole disable window: disabled by the health check, with its reason.
    await ctx.deliveries.record([attempt(dead, now + 7 * HOUR)])
    await check_health(ctx, now + 7 * HOUR)
    disabled = await told(ctx, org, "webhook_endpoint.disabled")
    assert disabled == [{"endpoint_id": dead, "url": f"{HOOK}/dead", "reason": "failing"}]

    # By hand: enabled, then disabled with reason manual; a PATCH that changes nothing is quiet.
    path = f"/v1/webhook_endpoints/{dead}"
    for disabled_now in (False, False, True, True):
        status, _ = await api.call("PATCH", path, json={"disabled": disabled_now})
        assert status == 200
    assert await told(ctx, org, "webhook_endpoint.enabled") == [
        {"endpoint_id": dead, "url": f"{HOOK}/dead"}
    ]
    assert (await told(ctx, org, "webhook_endpoint.disabled"))[1:] == [
        {"endpoint_id": dead, "url": f"{HOOK}/dead", "reason": "manual"}
    ]
    assert await told(ctx, org, "webhook_endpoint.failing") == failing + [
        (await told(ctx, org, "webhook_endpoint.failing"))[1]
    ]


async def test_exhausted_is_told_with_its_record_and_only_then(api: Api, ctx: Context) -> None:
    org = await org_of(ctx, api)
    target = str((await api.endpoint(f"{HOOK}/target", ["payment.created"]))["id"])
    now = now_ms()
    retrying = attempt(target, now)
    await record_attempts(ctx, [retrying, attempt(target, now, "success", None)])
    assert await told(ctx, org, "delivery.exhausted") == []

    ran_out = attempt(target, now + MINUTE, "http_error", None)
    again = attempt(target, now + MINUTE, "timeout", None)
    await record_attempts(ctx, [ran_out, again])
    assert await told(ctx, org, "delivery.exhausted") == [
        {"endpoint_id": target, "url": f"{HOOK}/target", "event_id": a.event_id,
         "event_type": "payment.created"}
        for a in (ran_out, again)
    ]  # fmt: skip
    logged = await ctx.db.fetchval(
        "SELECT count(*) FROM delivery_attempts WHERE endpoint_id = $1", target
    )
    assert logged == 4
    # An operational event's own exhaustion is not told (two failing endpoints never loop).
    about = replace_type(attempt(target, now + 2 * MINUTE, "timeout", None), "delivery.exhausted")
    await record_attempts(ctx, [about])
    assert len(await told(ctx, org, "delivery.exhausted")) == 2


def replace_type(a: Attempt, event_type: str) -> Attempt:
    from dataclasses import replace

    return replace(a, event_type=event_type)


async def test_operational_events_reach_subscribers_but_never_their_subject(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    watcher = str((await api.endpoint(receiver.url("/watcher"), OPERATIONAL))["id"])
    subject = str((await api.endpoint(receiver.url("/subject"), OPERATIONAL))["id"])
    for disabled in (True, False):
        status, _ = await api.call(
            "PATCH", f"/v1/webhook_endpoints/{subject}", json={"disabled": disabled}
        )
        assert status == 200
    # The watcher's own change is delivered to the subject, which is on again.
    status, _ = await api.call("PATCH", f"/v1/webhook_endpoints/{watcher}", json={"disabled": True})
    assert status == 200

    def kinds(path: str) -> list[tuple[str, str]]:
        return [
            (r.headers["Svc-Event-Type"], orjson.loads(r.body)["data"]["endpoint_id"])
            for r in receiver.at(path)
        ]

    await receiver.wait_for(
        lambda _: len(receiver.at("/watcher")) >= 2 and bool(receiver.at("/subject"))
    )
    assert sorted(kinds("/watcher")) == [
        ("webhook_endpoint.disabled", subject),
        ("webhook_endpoint.enabled", subject),
    ]
    assert kinds("/subject") == [("webhook_endpoint.disabled", watcher)]
    # A resend to every subscriber leaves the subject out as well.
    event_id = orjson.loads(receiver.at("/subject")[0].body)["id"]
    await api.call("PATCH", f"/v1/webhook_endpoints/{watcher}", json={"disabled": False})
    status, _ = await api.call("POST", f"/v1/events/{event_id}/resend")
    assert status == 202
    await receiver.wait_for(lambda _: len(receiver.at("/subject")) >= 3)
    assert sorted(kinds("/subject")) == [
        ("webhook_endpoint.disabled", watcher),
        ("webhook_endpoint.disabled", watcher),
        ("webhook_endpoint.enabled", watcher),
    ]
    assert all(endpoint != watcher for _, endpoint in kinds("/watcher"))


@pytest.mark.settings(retry_ladder="1s..2s")
async def test_a_delivery_whose_ladder_runs_out_is_told_to_the_other_endpoints(
    api: Api, receiver: Receiver
) -> None:
    receiver.on("/dead", lambda _path, _n: 503)
    dead = str((await api.endpoint(receiver.url("/dead"), ["payment.created", *OPERATIONAL]))["id"])
    await api.endpoint(receiver.url("/watcher"), ["delivery.exhausted"])
    form = {"amount": "2450", "currency": "CHF", "channel": "online",
            "success_url": "https://shop.example/done"}  # fmt: skip
    status, payment = await api.call(
        "POST", "/v1/payments", data=form, headers={"Idempotency-Key": new_id("idem")}
    )
    assert status == 201, payment
    await receiver.wait_for(lambda _: bool(receiver.at("/watcher")), timeout=20)
    [told] = [orjson.loads(r.body) for r in receiver.at("/watcher")]
    created = [orjson.loads(r.body) for r in receiver.at("/dead")]
    assert told["type"] == "delivery.exhausted"
    assert told["data"] == {
        "endpoint_id": dead,
        "url": receiver.url("/dead"),
        "event_id": created[0]["id"],
        "event_type": "payment.created",
    }
    assert len(created) >= 2  # retried on the ladder first
    assert all(body["type"] == "payment.created" for body in created)  # never told of itself
