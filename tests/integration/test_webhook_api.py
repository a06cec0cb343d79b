"""The webhook endpoint API: create, secret shown once, list, read, delete, scope, validation."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import generate_latest

from harness.receivers import Receiver
from svc.amqp.commands import Resend
from svc.context import Context
from svc.envelope import new_event
from svc.events.flow import emit, publish_event
from tests.conftest import Api

HOOK = "https://hooks.example.com/svc"


async def test_create_shows_secret_once(api: Api) -> None:
    created = await api.endpoint(HOOK, ["payment.succeeded", "refund.failed"])
    assert str(created["id"]).startswith("we_")
    assert str(created["secret"]).startswith("whsec_")
    assert created["url"] == HOOK
    assert created["events"] == ["payment.succeeded", "refund.failed"]

    status, read = await api.call("GET", f"/v1/webhook_endpoints/{created['id']}")
    assert status == 200 and isinstance(read, dict)
    assert "secret" not in read
    assert {k: v for k, v in created.items() if k != "secret"} == read

    status, listed = await api.call("GET", "/v1/webhook_endpoints")
    assert status == 200 and isinstance(listed, dict)
    assert [e["id"] for e in listed["data"]] == [created["id"]]
    assert all("secret" not in e for e in listed["data"])


async def test_list_is_paginated_newest_first(api: Api) -> None:
    ids = [str((await api.endpoint(f"{HOOK}/{n}", ["payout.paid"]))["id"]) for n in range(5)]
    seen: list[str] = []
    cursor = None
    while True:
        query = "?limit=2" + (f"&cursor={cursor}" if cursor else "")
        status, page = await api.call("GET", "/v1/webhook_endpoints" + query)
        assert status == 200 and isinstance(page, dict)
        seen += [e["id"] for e in page["data"]]
        assert page["has_more"] == (page["next_cursor"] is not None)
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == list(reversed(ids))


async def test_delete(api: Api) -> None:
    created = await api.endpoint(HOOK, ["payment.created"])
    path = f"/v1/webhook_endpoints/{created['id']}"
    status, body = await api.call("DELETE", path)
    assert status == 200 and isinstance(body, dict) and body["deleted"] is True
    status, body = await api.call("GET", path)
    assert status == 404 and isinstance(body, dict) and body["code"] == "endpoint_not_found"
    status, _ = await api.call("DELETE", path)
    assert status == 404


async def test_scopes_do_not_see_each_other(make_api: object) -> None:
    acme_test: Api = await make_api(env="test", org="acme")  # type: ignore[operator]
    acme_live: Api = await make_api(env="live", org="acme")  # type: ignore[operator]
    other_test: Api = await make_api(env="test", org="other")  # type: ignore[operator]
    assert acme_live.key.startswith("svc_live_") and acme_test.key.startswith("svc_test_")
    created = await acme_live.endpoint(HOOK, ["payment.created"])
    for outsider in (acme_test, other_test):
        status, body = await outsider.call("GET", f"/v1/webhook_endpoints/{created['id']}")
        assert status == 404
        status, listed = await outsider.call("GET", "/v1/webhook_endpoints")
        assert status == 200 and isinstance(listed, dict) and listed["data"] == []
        status, _ = await outsider.call("DELETE", f"/v1/webhook_endpoints/{created['id']}")
        assert status == 404
        status, _ = await outsider.call("POST", f"/v1/webhook_endpoints/{created['id']}/test")
        assert status == 404
    status, _ = await acme_live.call("GET", f"/v1/webhook_endpoints/{created['id']}")
    assert status == 200


async def test_events_are_scoped(make_api: object, ctx: Context) -> None:
    owner: Api = await make_api(org="acme")  # type: ignore[operator]
    other: Api = await make_api(org="other")  # type: ignore[operator]
    scope = await ctx.api_keys.resolve(owner.key)
    assert scope is not None
    event = new_event("payment.created", "test", {"id": "pay_s", "status": "pending", "amount": 1})
    await publish_event(ctx, event, scope.org)
    for path in (f"/v1/events/{event.id}", f"/v1/events/{event.id}/deliveries"):
        assert (await owner.call("GET", path))[0] == 200
        assert (await other.call("GET", path))[0] == 404
    assert (await other.call("POST", f"/v1/events/{event.id}/resend"))[0] == 404


@pytest.mark.parametrize(
    ("headers", "code"),
    [
        ({}, "missing_api_key"),
        ({"Authorization": "Bearer svc_test_nope"}, "invalid_api_key"),
        ({"Authorization": "Bearer svc_live_nope"}, "invalid_api_key"),
        ({"Authorization": "Basic abc"}, "invalid_authorization"),
        ({"Authorization": "Bearer something_else"}, "invalid_api_key"),
    ],
)
async def test_bad_credentials_are_401(api: Api, headers: dict[str, str], code: str) -> None:
    async with api.session.get("/v1/webhook_endpoints", headers=headers) as response:
        assert response.status == 401
        assert response.content_type == "application/problem+json"
        body = await response.json(content_type=None)
    assert body["code"] == code and body["status"] == 401


async def test_health_needs_no_credential(api: Api) -> None:
    async with api.session.get("/health") as response:
        assert response.status == 200
        body = await response.json()
    assert body["status"] == "ok" and isinstance(body["version"], str)
    async with api.session.get(api.ops_url + "/ready") as response:
        assert response.status == 200


@pytest.mark.parametrize(
    ("payload", "field", "code"),
    [
        ({"url": HOOK, "events": ["payment.nope"]}, "events[0]", "unknown_event_type"),
        (
            {"url": "ftp://example.com/x", "events": ["payment.created"]},
            "url",
            "unsupported_scheme",
        ),
        (
            {"url": "javascript:alert(1)", "events": ["payment.created"]},
            "url",
            "unsupported_scheme",
        ),
        ({"url": "https://", "events": ["payment.created"]}, "url", "invalid_url"),
        ({"events": ["payment.created"]}, "url", "required"),
        ({"url": HOOK}, "events", "required"),
        ({"url": HOOK, "events": []}, "events", "empty"),
        ({"url": HOOK, "events": "payment.created"}, "events", "invalid_type"),
        ({"url": 5, "events": ["payment.created"]}, "url", "invalid_type"),
        ({"url": HOOK, "events": ["payment.created"], "colour": "red"}, "colour", "unknown_field"),
        ({"url": "https://u:p@example.com/", "events": ["payment.created"]}, "url", "invalid_url"),
        ({"url": HOOK + "/a\x00b", "events": ["payment.created"]}, "url", "invalid_url"),
        ({"url": HOOK + "/a\x7fb", "events": ["payment.created"]}, "url", "invalid_url"),
        (
            {"url": HOOK, "events": ["payment.created"], "description": "till\x004"},
            "description",
            "invalid_character",
        ),
    ],
)
async def test_validation_problems_name_the_field(
    api: Api, payload: dict[str, object], field: str, code: str
) -> None:
    status, body = await api.call("POST", "/v1/webhook_endpoints", json=payload)
    assert status == 422 and isinstance(body, dict)
    assert body["code"] == "validation_error"
    assert {"field": field, "code": code} in [
        {"field": e["field"], "code": e["code"]} for e in body["errors"]
    ]
    status, listed = await api.call("GET", "/v1/webhook_endpoints")
    assert isinstance(listed, dict) and listed["data"] == []


async def test_malformed_json_is_400(api: Api) -> None:
    status, body = await api.call(
        "POST",
        "/v1/webhook_endpoints",
        data=b"{not json",
        headers={"Content-Type": "application/json"},
    )
    assert status == 400 and isinstance(body, dict) and body["code"] == "invalid_json"


async def test_test_event_goes_to_that_endpoint_alone(api: Api, receiver: Receiver) -> None:
    target = await api.endpoint(receiver.url("/target"), ["payment.created"])
    await api.endpoint(receiver.url("/bystander"), ["payment.succeeded"])
    status, body = await api.call("POST", f"/v1/webhook_endpoints/{target['id']}/test")
    assert status == 202 and isinstance(body, dict)
    received = await receiver.wait_for(lambda r: len(r) >= 1)
    await asyncio.sleep(0.3)
    assert [r.path for r in receiver.received] == ["/target"]
    import orjson

    envelope = orjson.loads(received[0].body)
    assert envelope["type"] == "payment.succeeded"
    assert envelope["id"] == body["event_id"]
    assert set(envelope["data"]) >= {"id", "status", "amount"}
    for _ in range(50):
        _, log = await api.call("GET", f"/v1/webhook_endpoints/{target['id']}/deliveries")
        assert isinstance(log, dict)
        if log["data"]:
            break
        await asyncio.sleep(0.05)
    assert log["data"][0]["trigger"] == "test"


async def test_outbox_sweep_publishes_an_event_whose_publish_was_lost(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    await api.endpoint(receiver.url("/late"), ["payment.created"])
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    event = new_event("payment.created", "test", {"id": "pay_o", "status": "pending", "amount": 3})
    async with ctx.db.transaction() as unit:  # stored, then the producer "died"
        await ctx.events.insert(unit, event, scope.org)
    received = await receiver.wait_for(lambda r: len(r) >= 1, timeout=10)
    assert received[0].body == event.body
    for _ in range(100):  # the sweep deletes the row once the broker confirmed
        if not await ctx.db.fetchval("SELECT count(*) FROM outbox"):
            break
        await asyncio.sleep(0.05)
    assert await ctx.db.fetchval("SELECT count(*) FROM outbox") == 0


async def _outbox_rows(ctx: Context, table: str, within: float = 5.0) -> int:
    """Rows left in an outbox once it empties, or after ``within`` seconds."""
    for _ in range(int(within / 0.05)):
        if not await ctx.db.fetchval(f"SELECT count(*) FROM {table}"):
            break
        await asyncio.sleep(0.05)
    count: int = await ctx.db.fetchval(f"SELECT count(*) FROM {table}")
    return count


async def test_a_resend_request_is_confirmed_then_cleared_from_the_command_outbox(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    await api.endpoint(receiver.url("/again"), ["payment.created"])
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    data = {"id": "pay_r", "status": "pending", "amount": 5}
    event = await emit(ctx, scope.org, "test", "payment.created", data)
    await receiver.wait_for(lambda r: len(r) >= 1, timeout=10)
    status, _ = await api.call("POST", f"/v1/events/{event.id}/resend")
    assert status == 202
    received = await receiver.wait_for(lambda r: len(r) >= 2, timeout=10)
    assert received[1].body == event.body
    assert await _outbox_rows(ctx, "command_outbox") == 0


async def test_outbox_sweep_sends_a_resend_request_whose_publish_was_lost(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    target = await api.endpoint(receiver.url("/lost"), ["payment.created"])
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    event = new_event("payment.created", "test", {"id": "pay_l", "status": "pending", "amount": 4})
    async with ctx.db.transaction() as unit:  # the request committed, then the API "died"
        await ctx.events.insert(unit, event, scope.org, outbox=False)
        request = Resend(event.id, trigger="resend", endpoint_id=str(target["id"]))
        await unit.execute("INSERT INTO command_outbox (body) VALUES ($1)", request.to_body())
    received = await receiver.wait_for(lambda r: len(r) >= 1, timeout=10)
    assert received[0].body == event.body
    assert received[0].headers["Svc-Event-Id"] == event.id
    assert await _outbox_rows(ctx, "command_outbox") == 0


async def test_metrics_after_a_delivery(api: Api, ctx: Context, receiver: Receiver) -> None:
    await api.endpoint(receiver.url("/m"), ["payment.created"])
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    await publish_event(
        ctx,
        new_event("payment.created", "test", {"id": "p", "status": "pending", "amount": 1}),
        scope.org,
    )
    await receiver.wait_for(lambda r: len(r) >= 1)
    await asyncio.sleep(0.1)
    async with api.session.get(api.ops_url + "/metrics") as response:
        text = await response.text()
    assert 'svc_deliveries_total{outcome="success",status_class="2xx"} 1.0' in text
    # The producer (this test's context) counts what it published.
    produced = generate_latest(ctx.metrics.registry).decode()
    assert 'svc_events_published_total{type="payment.created"} 1.0' in produced
    assert "svc_delivery_lag_seconds_bucket" in text
    assert 'svc_queue_messages{queue="deliveries"}' in text
    assert "we_" not in text and "127.0.0.1" not in text  # no endpoint ids or URLs as labels
