"""Events are identified within their scope (organisation, environment, id): another scope's
event with the same id is an event of its own, stored, delivered, read, listed and resent by
its scope alone, and never shows its delivery attempts to anyone else."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import asyncpg
import orjson
import pytest

from harness.receivers import Receiver
from svc.context import Context
from svc.db import Database
from svc.db.migrate import migrate
from svc.envelope import Event, iso_ms
from svc.events.store.events import Events
from svc.orgs import Scope
from tests.conftest import Api, Running
from tests.dashboard.conftest import Dashboard
from tests.integration.test_endpoint_recovery import HOUR, MINUTE, backdate, now_ms
from tests.integration.test_foreign import Foreign, org_of, wait_delivered
from tests.integration.test_migrations import empty_url  # noqa: F401 (a fixture)
from tests.integration.test_payments import create
from tests.integration.test_retry_rescue import attempt

SCOPE_VERSION = 11
"""The migration that identifies events within their scope."""
BEFORE = {"org_a": b'{"id": "order-1", "a": 1}', "org_b": b'{"id": "order-1", "b": 2}'}
"""Two organisations' events with one id, stored before that migration."""
CREATED = datetime.now(UTC)
PRODUCER_MS = 1_700_000_000_000
"""A producer's own time of an event (the ``svc-created-ms`` header), long before it arrives."""


def envelope(event_id: str, owner: str, env: str = "test") -> bytes:
    """An envelope whose data names its producer, so each scope can tell its own apart."""
    data = {"id": f"order-of-{owner}", "status": "succeeded", "amount": 1200}
    event = {"id": event_id, "type": "payment.succeeded", "environment": env, "data": data}
    return orjson.dumps(event)


async def publish(ctx: Context, org: str, env: str, body: bytes) -> None:
    """Publish ``body`` on the events exchange as a foreign producer of that scope does."""
    name = f"{org}-{env}"
    await Foreign(name, headers={"svc-org": org, "svc-env": env}, body=body).publish(ctx)


async def arrived(receiver: Receiver, path: str, count: int) -> list[bytes]:
    """The bodies ``path`` received once it has ``count`` of them."""
    await receiver.wait_for(lambda _: len(receiver.at(path)) >= count)
    return [r.body for r in receiver.at(path)]


async def delivered_to(api: Api, event_id: str) -> tuple[dict[str, Any], set[str]]:
    """The event as ``api``'s scope reads it, and the endpoints its delivery log names."""
    event = await wait_delivered(api, event_id)
    status, log = await api.call("GET", f"/v1/events/{event_id}/deliveries")
    assert status == 200 and isinstance(log, dict), log
    return event, {d["endpoint_id"] for d in log["data"]}


def data_of(event: dict[str, Any]) -> object:
    data = event["data"]
    assert isinstance(data, dict)
    return data["id"]


@pytest.mark.settings(dashboard_secure_cookies=False)
async def test_two_organisations_events_with_one_id_are_two_events(
    make_api: Any, ctx: Context, receiver: Receiver, service: Running
) -> None:
    acme: Api = await make_api(org="acme")
    other: Api = await make_api(org="other")
    acme_hook = await acme.endpoint(receiver.url("/acme"), ["payment.succeeded"])
    receiver.on("/other", lambda _path, _count: 200)  # its answer's body is logged
    other_hook = await other.endpoint(receiver.url("/other"), ["payment.succeeded"])
    acme_body, other_body = envelope("order-1", "acme"), envelope("order-1", "other")

    await publish(ctx, await org_of(ctx, acme), "test", acme_body)
    assert await arrived(receiver, "/acme", 1) == [acme_body]
    await wait_delivered(acme, "order-1")
    await publish(ctx, await org_of(ctx, other), "test", other_body)
    assert await arrived(receiver, "/other", 1) == [other_body]

    event, logged = await delivered_to(other, "order-1")
    assert data_of(event) == "order-of-other" and logged == {other_hook["id"]}
    assert [d["endpoint_id"] for d in event["deliveries"]] == [other_hook["id"]]
    event, logged = await delivered_to(acme, "order-1")
    assert data_of(event) == "order-of-acme" and logged == {acme_hook["id"]}
    assert [d["endpoint_id"] for d in event["deliveries"]] == [acme_hook["id"]]
    for api, owner in ((acme, "order-of-acme"), (other, "order-of-other")):
        status, listed = await api.call("GET", "/v1/events")
        assert status == 200 and isinstance(listed, dict)
        assert [(e["id"], data_of(e)) for e in listed["data"]] == [("order-1", owner)]

    status, body = await acme.call("POST", "/v1/events/order-1/resend")
    assert status == 202 and body == {"event_id": "order-1", "status": "scheduled"}
    assert await arrived(receiver, "/acme", 2) == [acme_body, acme_body]
    status, _ = await other.call("POST", "/v1/events/order-1/resend")
    assert status == 202
    assert await arrived(receiver, "/other", 2) == [other_body, other_body]
    await asyncio.sleep(0.5)
    assert len(receiver.at("/acme")) == 2 and len(receiver.at("/other")) == 2

    dashboard = Dashboard(service.base_url)
    try:
        assert (await dashboard.sign_in(acme.key)).status == 303
        page = await dashboard.get("/dashboard/events/order-1")
        assert page.status == 200 and "order-of-acme" in page.text
        assert "order-of-other" not in page.text and other_hook["id"] not in page.text
        assert acme_hook["id"] in page.text
    finally:
        await dashboard.session.close()


async def test_an_environment_and_an_organisation_reusing_an_event_id_of_ours(
    make_api: Any, ctx: Context, receiver: Receiver
) -> None:
    test: Api = await make_api(env="test", org="acme")
    live: Api = await make_api(env="live", org="acme")
    other: Api = await make_api(org="other")
    hooks = {
        name: (
            await api.endpoint(receiver.url(f"/{name}"), ["payment.created", "payment.succeeded"])
        )["id"]
        for name, api in (("test", test), ("live", live), ("other", other))
    }
    status, payment = await create(test)
    assert status == 201, payment
    [ours] = await arrived(receiver, "/test", 1)
    event_id = orjson.loads(ours)["id"]
    ours_read = await wait_delivered(test, event_id)

    live_body = envelope(event_id, "live", "live")
    await publish(ctx, await org_of(ctx, live), "live", live_body)
    other_body = envelope(event_id, "other")
    await publish(ctx, await org_of(ctx, other), "test", other_body)
    assert await arrived(receiver, "/live", 1) == [live_body]
    assert await arrived(receiver, "/other", 1) == [other_body]

    for api, name in ((live, "live"), (other, "other")):
        event, logged = await delivered_to(api, event_id)
        assert data_of(event) == f"order-of-{name}" and logged == {hooks[name]}
    event, logged = await delivered_to(test, event_id)
    assert event == ours_read and logged == {hooks["test"]}
    assert data_of(event) == payment["id"]

    status, _ = await test.call("POST", f"/v1/events/{event_id}/resend")
    assert status == 202
    assert await arrived(receiver, "/test", 2) == [ours, ours]
    await asyncio.sleep(0.5)
    assert len(receiver.at("/live")) == 1 and len(receiver.at("/other")) == 1


async def test_ordered_endpoints_each_get_their_scopes_event(
    make_api: Any, ctx: Context, receiver: Receiver
) -> None:
    """Two scopes' events with one id and one producer time, each to an ordered endpoint: a
    lane sends its own scope's event (filed under the time it arrived, like any foreign one)."""
    acme: Api = await make_api(org="acme")
    other: Api = await make_api(org="other")
    for api, path in ((acme, "/acme"), (other, "/other")):
        hook = await api.endpoint(receiver.url(path), ["payment.succeeded"])
        status, _ = await api.call(
            "PATCH", f"/v1/webhook_endpoints/{hook['id']}", json={"ordered": True}
        )
        assert status == 200
    for api, name in ((acme, "acme"), (other, "other")):
        headers = {"svc-org": await org_of(ctx, api), "svc-env": "test"}
        await Foreign(
            name, headers={**headers, "svc-created-ms": PRODUCER_MS}, body=envelope("o-1", name)
        ).publish(ctx)
    assert await arrived(receiver, "/acme", 1) == [envelope("o-1", "acme")]
    assert await arrived(receiver, "/other", 1) == [envelope("o-1", "other")]


@pytest.mark.settings(retry_ladder="1s..1h", retry_rescue_after=1.0)
async def test_rescue_and_recover_send_each_scope_its_own_event(
    make_api: Any, ctx: Context, receiver: Receiver
) -> None:
    """A retry the broker lost and a bulk recover, of two scopes' events with one id: each
    endpoint is sent its own scope's event, never the other's. The service's own scheduler
    rescues the retry: due now, it is overdue one rescue age later, past the watermark of
    every sweep so far (a second scheduler, looking an hour back, would race it)."""
    start, since = now_ms() - 20 * MINUTE, now_ms() - 10 * MINUTE
    rows = []
    for name in ("acme", "other"):
        api: Api = await make_api(org=name)
        lost, missed = [
            str((await api.endpoint(receiver.url(f"/{name}-{k}"), ["payment.succeeded"]))["id"])
            for k in ("lost", "missed")
        ]
        event = Event("order-7", "payment.succeeded", "test", start, envelope("order-7", name))
        async with ctx.unit() as unit:
            await ctx.events.insert(unit, event, await org_of(ctx, api), outbox=False)
        rows += [
            attempt(event, lost, 1, start, now_ms()),  # its retry lost
            attempt(event, missed, 1, since + MINUTE, None),  # exhausted: to be recovered
        ]
        await backdate(ctx, since - HOUR)
        path = f"/v1/webhook_endpoints/{missed}/recover"
        await ctx.deliveries.record(rows[-2:])
        status, answer = await api.call("POST", path, json={"since": iso_ms(since)})
        assert status == 202 and isinstance(answer, dict) and answer["events"] == 1, answer

    for name in ("acme", "other"):
        for kind in ("lost", "missed"):
            assert await arrived(receiver, f"/{name}-{kind}", 1) == [envelope("order-7", name)]
    await asyncio.sleep(0.5)
    assert len(receiver.received) == 4


async def test_requests_staged_before_they_named_the_scope(
    make_api: Any, ctx: Context, receiver: Receiver
) -> None:
    """Resend requests staged by a release that named no scope (left in the command outbox
    across an upgrade): one naming an endpoint sends that endpoint's scope's event; one for
    every subscriber sends the event only when no other scope holds its id."""
    held: dict[str, list[str]] = {"acme": ["order-8", "order-9"], "other": ["order-8"]}
    hooks = {}
    for name, ids in held.items():
        api: Api = await make_api(org=name)
        hooks[name] = (await api.endpoint(receiver.url(f"/{name}"), ["payment.succeeded"]))["id"]
        async with ctx.unit() as unit:
            for event_id in ids:
                event = Event(
                    event_id, "payment.succeeded", "test", now_ms(), envelope(event_id, name)
                )
                await ctx.events.insert(unit, event, await org_of(ctx, api), outbox=False)
    staged = [("order-8", hooks["other"]), ("order-8", None), ("order-9", None)]
    async with ctx.db.transaction() as unit:
        for event_id, endpoint_id in staged:
            body = {"event_id": event_id, "trigger": "resend", "endpoint_id": endpoint_id}
            await unit.execute("INSERT INTO command_outbox (body) VALUES ($1)", orjson.dumps(body))

    assert await arrived(receiver, "/other", 1) == [envelope("order-8", "other")]
    assert await arrived(receiver, "/acme", 1) == [envelope("order-9", "acme")]
    await asyncio.sleep(1.0)  # the sweep has long sent the ambiguous one too
    assert len(receiver.received) == 2


async def test_events_stored_before_the_migration_stay_readable(
    empty_url: str,  # noqa: F811 (the fixture imported above)
) -> None:
    conn = await asyncpg.connect(empty_url)
    try:
        await migrate(conn, through=SCOPE_VERSION - 1)  # and today's partitions
        for org, body in BEFORE.items():
            await conn.execute(
                "INSERT INTO events (id, org_id, env, type, created_at, body) "
                "VALUES ('order-1', $1, 'test', 'payment.succeeded', $2, $3)",
                org,
                CREATED,
                body,
            )
        await conn.execute(
            "INSERT INTO outbox (event_id, created_at) VALUES ('evt_1', $1)", CREATED
        )
        await conn.execute(
            "INSERT INTO events (id, org_id, env, type, created_at, body) "
            "VALUES ('evt_1', 'org_a', 'live', 'payment.created', $1, '{}')",
            CREATED,
        )
        assert [m for m in await migrate(conn) if m.startswith(f"{SCOPE_VERSION:04d}")]
    finally:
        await conn.close()
    pool = await asyncpg.create_pool(empty_url, min_size=1, max_size=2)
    try:
        events = Events(Database(pool))
        for org, body in BEFORE.items():
            stored = await events.load(Scope(org, "test"), "order-1")
            assert stored is not None and stored.event.body == body
        assert await events.load(Scope("org_a", "live"), "order-1") is None
        async with Database(pool).transaction() as unit:  # its publish was lost before
            [straggler] = await events.lock_stragglers(unit, 2**42, 10)
        assert (straggler.org, straggler.event.id, straggler.event.environment) == (
            "org_a",
            "evt_1",
            "live",
        )
    finally:
        await pool.close()
