"""An endpoint's custom headers and payload filter, end to end: validated by the API (a 422
naming the header or the bad part of the filter), stored, shown, and applied by the
dispatcher: the headers ride on every delivery, and an event the filter leaves out is neither
an attempt nor a failure, only counted."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harness.receivers import Receiver
from svc.context import Context
from svc.events.flow import emit
from tests.conftest import Api, Running
from tests.integration.test_delivery_engine import counter

PAID = "payment.succeeded"


async def _scope(api: Api, ctx: Context) -> tuple[str, str]:
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    return scope.org, scope.env


async def _create(api: Api, **body: Any) -> tuple[int, Any]:
    return await api.call("POST", "/v1/webhook_endpoints", json=body)


async def _refused(api: Api, receiver: Receiver, field: str, code: str, **body: Any) -> None:
    """Creating an endpoint with ``body`` is a 422 naming ``field`` with ``code``."""
    status, problem = await _create(api, url=receiver.url("/h"), events=[PAID], **body)
    assert status == 422, problem
    assert (field, code) in {(e["field"], e["code"]) for e in problem["errors"]}, problem


async def test_headers_ride_on_every_delivery(api: Api, ctx: Context, receiver: Receiver) -> None:
    headers = {"Authorization": "Bearer t0ken", "X-Tenant": "bakery"}
    status, endpoint = await _create(api, url=receiver.url("/hook"), events=[PAID], headers=headers)
    assert status == 201, endpoint
    assert endpoint["headers"] == headers
    status, read = await api.call("GET", f"/v1/webhook_endpoints/{endpoint['id']}")
    assert read["headers"] == headers
    stored = await ctx.db.fetchval(
        "SELECT headers::text FROM webhook_endpoints WHERE id = $1", endpoint["id"]
    )
    assert stored is None or "t0ken" not in stored  # sealed at rest, like secrets

    org, env = await _scope(api, ctx)
    await emit(ctx, org, env, PAID, {"id": "pay_1", "amount": 100})
    first = (await receiver.wait_for(lambda r: len(r) >= 1))[0]
    assert first.headers["Authorization"] == "Bearer t0ken"
    assert first.headers["X-Tenant"] == "bakery"
    assert first.headers["Svc-Signature"]

    status, changed = await api.call(
        "PATCH", f"/v1/webhook_endpoints/{endpoint['id']}", json={"headers": {"X-Other": "1"}}
    )
    assert status == 200 and changed["headers"] == {"X-Other": "1"}
    await asyncio.sleep(1.5)  # the change notice reaches the dispatcher
    await emit(ctx, org, env, PAID, {"id": "pay_2", "amount": 100})
    second = (await receiver.wait_for(lambda r: len(r) >= 2))[1]
    assert second.headers.get("X-Other") == "1" and "Authorization" not in second.headers
    status, cleared = await api.call(
        "PATCH", f"/v1/webhook_endpoints/{endpoint['id']}", json={"headers": None}
    )
    assert status == 200 and cleared["headers"] == {}


@pytest.mark.parametrize(
    ("headers", "field", "code"),
    [
        ({"Host": "evil.example"}, "headers[Host]", "reserved_header"),
        ({"content-type": "text/plain"}, "headers[content-type]", "reserved_header"),
        ({"Content-Length": "1"}, "headers[Content-Length]", "reserved_header"),
        ({"Transfer-Encoding": "chunked"}, "headers[Transfer-Encoding]", "reserved_header"),
        ({"Connection": "close"}, "headers[Connection]", "reserved_header"),
        ({"Svc-Signature": "t=1,v1=x"}, "headers[Svc-Signature]", "reserved_header"),
        ({"webhook-id": "x"}, "headers[webhook-id]", "reserved_header"),
        ({"Bad Name": "x"}, "headers[Bad Name]", "invalid_header"),
        ({"X-A": "line\r\nInjected: 1"}, "headers[X-A]", "invalid_header"),
        ({"X-A": 5}, "headers[X-A]", "invalid_type"),
        ({f"X-{i}": "v" for i in range(21)}, "headers", "too_many"),
        (["X-A"], "headers", "invalid_type"),
    ],
)
async def test_headers_that_would_break_delivery_are_refused(
    api: Api, receiver: Receiver, headers: Any, field: str, code: str
) -> None:
    await _refused(api, receiver, field, code, headers=headers)


async def test_a_filter_keeps_only_the_events_it_matches(
    api: Api, ctx: Context, receiver: Receiver, service: Running
) -> None:
    big = {"data.amount": {"$gte": 10000}}
    status, endpoint = await _create(api, url=receiver.url("/big"), events=[PAID], filter=big)
    assert status == 201, endpoint
    assert endpoint["filter"] == big
    _, every = await _create(api, url=receiver.url("/all"), events=[PAID])
    filtered = await counter(service.ops_url, api, "svc_deliveries_filtered_total")

    org, env = await _scope(api, ctx)
    await emit(ctx, org, env, PAID, {"id": "pay_small", "amount": 500})
    await emit(ctx, org, env, PAID, {"id": "pay_big", "amount": 25000})
    await receiver.wait_for(lambda r: len(r) >= 3)
    await asyncio.sleep(0.5)
    assert len(receiver.at("/all")) == 2
    assert [r.body.count(b"pay_big") for r in receiver.at("/big")] == [1]
    after = await counter(service.ops_url, api, "svc_deliveries_filtered_total")
    assert after == filtered + 1
    status, log = await api.call("GET", f"/v1/webhook_endpoints/{endpoint['id']}/deliveries")
    assert status == 200 and len(log["data"]) == 1  # a filtered event is not an attempt

    status, changed = await api.call(
        "PATCH", f"/v1/webhook_endpoints/{endpoint['id']}", json={"filter": None}
    )
    assert status == 200 and changed["filter"] is None


@pytest.mark.parametrize(
    ("condition", "field", "code"),
    [
        ({"data.amount": {"$regex": "x"}}, "filter[data.amount][$regex]", "invalid_filter"),
        ({"$and": {"a": 1}}, "filter[$and]", "invalid_filter"),
        ({"$or": []}, "filter[$or]", "invalid_filter"),
        ({"data.amount": {"$in": 5}}, "filter[data.amount][$in]", "invalid_filter"),
        ({"data.amount": {"$exists": "yes"}}, "filter[data.amount][$exists]", "invalid_filter"),
        ({"data.amount": {"$gt": [1]}}, "filter[data.amount][$gt]", "invalid_filter"),
        ({"": 1}, "filter[]", "invalid_filter"),
        ("amount > 5", "filter", "invalid_type"),
    ],
)
async def test_a_bad_filter_is_a_422_naming_the_bad_part(
    api: Api, receiver: Receiver, condition: Any, field: str, code: str
) -> None:
    await _refused(api, receiver, field, code, filter=condition)


async def test_recover_and_a_resend_to_every_subscriber_keep_to_the_filter(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    status, endpoint = await _create(
        api, url=receiver.url("/big"), events=[PAID], filter={"data.amount": {"$gte": 10000}}
    )
    assert status == 201, endpoint
    org, env = await _scope(api, ctx)
    small = await emit(ctx, org, env, PAID, {"id": "pay_small", "amount": 500})
    big = await emit(ctx, org, env, PAID, {"id": "pay_big", "amount": 25000})
    await receiver.wait_for(lambda r: len(r) >= 1)
    for _ in range(50):  # the delivery log is written in batches, a moment after
        _, log = await api.call("GET", f"/v1/webhook_endpoints/{endpoint['id']}/deliveries")
        if log["data"]:
            break
        await asyncio.sleep(0.1)

    status, recovered = await api.call(
        "POST",
        f"/v1/webhook_endpoints/{endpoint['id']}/recover",
        json={"since": "2020-01-01T00:00:00Z"},
    )
    assert status == 202, recovered
    assert recovered["events"] == 0  # the big one was delivered, the small one is filtered
    for event in (small, big):
        status, _ = await api.call("POST", f"/v1/events/{event.id}/resend")
        assert status == 202
    await receiver.wait_for(lambda r: len(r) >= 2)
    await asyncio.sleep(1.0)
    assert [r.body.count(b"pay_big") for r in receiver.at("/big")] == [1, 1]
