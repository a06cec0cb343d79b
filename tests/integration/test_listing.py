"""The lists integrators reconcile with: GET /v1/events, /v1/payments and /v1/refunds."""

from __future__ import annotations

import time
from typing import Any

import orjson
from jsonschema import Draft202012Validator

from api.description import document
from api.description.shapes import event_schema_name
from harness.receivers import Receiver
from svc.context import Context
from svc.envelope import Event
from svc.events.flow import emit
from svc.events.model import StoredEvent
from svc.orgs import Scope
from tests.conftest import Api
from tests.money.flows import create, paid, refund

Query = list[tuple[str, str]]


async def org_of(ctx: Context, api: Api) -> str:
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    return scope.org


async def listed(api: Api, path: str, query: Query) -> list[dict[str, Any]]:
    """Every item of a list, page after page of two."""
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        params = [*query, ("limit", "2"), *([("cursor", cursor)] if cursor else [])]
        status, page = await api.call("GET", path, params=params)
        assert status == 200, page
        assert isinstance(page, dict)
        assert page["has_more"] == (page["next_cursor"] is not None)
        items += page["data"]
        cursor = page["next_cursor"]
        if cursor is None:
            return items


async def ids(api: Api, path: str, *query: tuple[str, str]) -> list[str]:
    return [item["id"] for item in await listed(api, path, list(query))]


async def refused(api: Api, path: str, query: Query) -> list[tuple[str, str]]:
    status, body = await api.call("GET", path, params=query)
    assert status == 422, body
    assert isinstance(body, dict) and body["code"] == "validation_error"
    return [(e["field"], e["code"]) for e in body["errors"]]


async def test_events_newest_first_paged_and_filtered(api: Api, ctx: Context) -> None:
    org = await org_of(ctx, api)
    kinds = ["payment.created", "payment.succeeded", "refund.succeeded", "payment.created"]
    made = [
        (await emit(ctx, org, "test", kind, {"id": f"x{n}"})).id for n, kind in enumerate(kinds)
    ]
    items = await listed(api, "/v1/events", [])
    assert [e["id"] for e in items] == made[::-1]
    assert all(e["object"] == "event" for e in items)

    assert await ids(api, "/v1/events", ("type", "payment.created")) == [made[3], made[0]]
    both = [made[3], made[2], made[0]]
    assert await ids(api, "/v1/events", ("type", "payment.created,refund.succeeded")) == both
    repeated = [("type", "payment.created"), ("type", "refund.succeeded")]
    assert await ids(api, "/v1/events", *repeated) == both

    third = items[1]["created_at"]  # made[2]
    assert await ids(api, "/v1/events", ("created[gte]", third)) == [made[3], made[2]]
    assert await ids(api, "/v1/events", ("created[lt]", third)) == [made[1], made[0]]
    later = str(int(time.time()) + 3600)
    assert await ids(api, "/v1/events", ("created[gte]", later)) == []
    assert await ids(api, "/v1/events", ("created[lt]", later)) == made[::-1]


async def test_listed_event_is_the_delivered_envelope(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    await api.endpoint(receiver.url("/hook"), ["payment.succeeded"])
    org = await org_of(ctx, api)
    event = await emit(ctx, org, "test", "payment.succeeded", {"id": "pay_x", "amount": 1200})
    [hook] = await receiver.wait_for(lambda r: len(r) >= 1)
    [item] = await listed(api, "/v1/events", [])
    assert item.pop("object") == "event"
    assert item == orjson.loads(hook.body) == orjson.loads(event.body)


async def test_foreign_events_are_listed_and_scopes_kept_apart(
    api: Api, make_api: Any, ctx: Context
) -> None:
    org = await org_of(ctx, api)
    body = orjson.dumps(
        {"id": "order-7", "type": "payment.succeeded", "environment": "test", "data": {}}
    )
    now = int(time.time() * 1000)
    foreign = Event("order-7", "payment.succeeded", "test", now, body)
    await ctx.events.store_if_absent(StoredEvent(foreign, org), now)
    [item] = await listed(api, "/v1/events", [])
    assert item == {**orjson.loads(body), "object": "event"}

    live: Api = await make_api(env="live", org="acme")
    other: Api = await make_api(env="test", org="other")
    await emit(ctx, org, "live", "payment.created", {"id": "pay_live"})
    assert await ids(other, "/v1/events") == []
    assert [e["data"]["id"] for e in await listed(live, "/v1/events", [])] == ["pay_live"]
    assert await ids(api, "/v1/events") == ["order-7"]


async def test_pages_end_on_foreign_event_ids_of_any_shape(api: Api, ctx: Context) -> None:
    org = await org_of(ctx, api)
    odd = ["order.123:a", "x" * 100, "évé nt#1?", "\U0001f600" * 255, "order.123:b"]
    now = int(time.time() * 1000)
    for n, event_id in enumerate(odd):
        body = orjson.dumps({"id": event_id, "type": "payment.succeeded", "data": {}})
        foreign = Event(event_id, "payment.succeeded", "test", now + n, body)
        await ctx.events.store_if_absent(StoredEvent(foreign, org), now + n)
    # In pages of two, odd[3] and odd[1] end a page; in pages of one, every id does.
    assert await ids(api, "/v1/events") == odd[::-1]
    seen: list[str] = []
    cursor: str | None = ""
    while cursor is not None:
        params = [("limit", "1"), *([("cursor", cursor)] if cursor else [])]
        status, page = await api.call("GET", "/v1/events", params=params)
        assert status == 200 and isinstance(page, dict), page
        seen += [e["id"] for e in page["data"]]
        cursor = page["next_cursor"]
    assert seen == odd[::-1]


async def test_listed_events_match_the_list_schema(api: Api, ctx: Context) -> None:
    org = await org_of(ctx, api)
    payment = await paid(api)
    await refund(api, payment["id"])
    body = orjson.dumps({"id": "order.9:x", "type": "payment.succeeded", "data": {"n": 1}})
    now = int(time.time() * 1000)
    foreign = Event("order.9:x", "payment.succeeded", "test", now, body)
    await ctx.events.store_if_absent(StoredEvent(foreign, org), now)
    items = await listed(api, "/v1/events", [])
    assert len({e["type"] for e in items if e["id"].startswith("evt_")}) >= 3, items

    doc = document()
    listed_event = {"$ref": "#/components/schemas/ListedEvent", "components": doc["components"]}
    check = Draft202012Validator(listed_event, format_checker=Draft202012Validator.FORMAT_CHECKER)
    for item in items:
        assert [e.message for e in check.iter_errors(item)] == [], item
        if item["id"] != "order.9:x":  # the service's own: the webhook schema of its type
            name = f"Listed{event_schema_name(item['type'])}Event"
            own = {"$ref": f"#/components/schemas/{name}", "components": doc["components"]}
            assert list(Draft202012Validator(own).iter_errors(item)) == [], item


async def test_payments_listed_and_filtered(api: Api, make_api: Any) -> None:
    online = [await create(api, 1000 + n) for n in range(3)]
    phone = await create(api, 2000, "phone")
    status, _ = await api.call("POST", f"/v1/payments/{online[1]['id']}/cancel")
    assert status == 200
    newest = [phone["id"], *(p["id"] for p in reversed(online))]
    items = await listed(api, "/v1/payments", [])
    assert [p["id"] for p in items] == newest
    assert items[0] == (await api.call("GET", f"/v1/payments/{phone['id']}"))[1]

    assert await ids(api, "/v1/payments", ("status", "canceled")) == [online[1]["id"]]
    assert await ids(api, "/v1/payments", ("channel", "phone")) == [phone["id"]]
    no_terminal = ("terminal_id", "trm_" + "0" * 26)
    assert await ids(api, "/v1/payments", no_terminal) == []
    middle = online[1]["created_at"]
    assert await ids(api, "/v1/payments", ("created[gte]", middle)) == newest[:3]
    assert await ids(api, "/v1/payments", ("created[lt]", middle)) == newest[3:]

    other: Api = await make_api(env="test", org="other")
    live: Api = await make_api(env="live", org="acme")
    assert await ids(other, "/v1/payments") == []
    assert await ids(live, "/v1/payments") == []


async def test_refunds_listed_and_filtered(api: Api, make_api: Any) -> None:
    first, second = await paid(api, 1000), await paid(api, 2000)
    made = []
    for payment in (first, second):
        status, created = await refund(api, payment["id"], 500)
        assert status == 201, created
        made.append(created["id"])
    assert await ids(api, "/v1/refunds") == made[::-1]
    assert await ids(api, "/v1/refunds", ("payment_id", first["id"])) == [made[0]]
    assert await ids(api, "/v1/refunds", ("status", "failed")) == []
    [later] = await listed(api, "/v1/refunds", [("payment_id", second["id"])])
    assert await ids(api, "/v1/refunds", ("created[gte]", later["created_at"])) == [made[1]]
    assert await ids(api, "/v1/refunds", ("created[lt]", later["created_at"])) == [made[0]]

    other: Api = await make_api(env="test", org="other")
    assert await ids(other, "/v1/refunds") == []
    assert await ids(other, "/v1/refunds", ("payment_id", first["id"])) == []


async def test_bad_input_names_the_parameter(api: Api) -> None:
    events, payments, refunds = "/v1/events", "/v1/payments", "/v1/refunds"
    assert await refused(api, events, [("type", "payment.created,nope")]) == [
        ("type", "unknown_event_type")
    ]
    no_offset = ("created[gte]", "2026-11-21T08:00:00")
    assert await refused(api, events, [no_offset]) == [("created[gte]", "invalid_time")]
    assert await refused(api, payments, [("created[lt]", "yesterday")]) == [
        ("created[lt]", "invalid_time")
    ]
    backwards = [("created[gte]", "2026-11-21T08:00:00Z"), ("created[lt]", "1763712000")]
    assert await refused(api, refunds, backwards) == [("created[lt]", "invalid_range")]
    assert await refused(api, payments, [("status", "paid"), ("channel", "fax")]) == [
        ("status", "invalid_choice"),
        ("channel", "invalid_choice"),
    ]
    assert await refused(api, refunds, [("status", "canceled")]) == [("status", "invalid_choice")]
    assert await refused(api, payments, [("terminal_id", "till-1")]) == [
        ("terminal_id", "invalid_id")
    ]
    assert await refused(api, refunds, [("payment_id", "re_x")]) == [("payment_id", "invalid_id")]
    for path in (events, payments, refunds):
        assert await refused(api, path, [("cursor", "not a cursor")]) == [
            ("cursor", "invalid_cursor")
        ]
        assert await refused(api, path, [("limit", "101")]) == [("limit", "out_of_range")]

    for _ in range(2):
        await create(api)
    status, page = await api.call("GET", payments, params={"limit": "1"})
    assert status == 200 and isinstance(page, dict) and page["next_cursor"]
    foreign = [("cursor", page["next_cursor"])]
    assert await refused(api, refunds, foreign) == [("cursor", "invalid_cursor")]


async def test_a_rare_type_s_page_reads_one_page_of_its_index(
    ctx: Context, monkeypatch: Any
) -> None:
    """A type filter reads at most a page of rows per type, however many events of that type
    or of others the scope holds: each type is an ordered range of events_scope_type."""
    org = await ctx.orgs.ensure("rare-types")
    now = int(time.time() * 1000)
    await ctx.db.execute(
        """INSERT INTO events (id, org_id, env, type, created_at, body)
           SELECT 'evt_many' || n, $1, 'test',
                  CASE WHEN n % 100 = 0 THEN 'chargeback.created' ELSE 'payment.created' END,
                  to_timestamp(($2::bigint - n * 1000) / 1000.0), '{}'
           FROM generate_series(1, 3000) AS n""",
        org,
        now,
    )
    await ctx.db.execute("ANALYZE events")
    seen: list[tuple[str, tuple[Any, ...]]] = []
    fetch = ctx.db.fetch

    async def spy(query: str, *args: Any) -> list[Any]:
        seen.append((query, args))
        return await fetch(query, *args)

    monkeypatch.setattr(ctx.db, "fetch", spy)
    scope = Scope(org, "test")
    types = ["chargeback.created", "refund.succeeded"]
    first, cursor = await ctx.events.listed(scope, types, None, None, 5, None)
    second, _ = await ctx.events.listed(scope, types, None, None, 5, cursor)
    expected = [f"evt_many{n}" for n in range(100, 1100, 100)]
    assert [e.event.id for e in first + second] == expected
    for query, args in seen:
        plan = await ctx.db.fetchval(f"EXPLAIN (ANALYZE, FORMAT JSON) {query}", *args)
        read = _rows_read(orjson.loads(plan)[0]["Plan"])
        assert read <= 6 * len(types), (read, query)


def _rows_read(node: dict[str, Any]) -> int:
    """Rows the scans of ``events`` under ``node`` returned, over all their loops."""
    own = 0
    if str(node.get("Relation Name", "")).startswith("events"):
        own = node["Actual Rows"] * node["Actual Loops"]
    return own + sum(_rows_read(child) for child in node.get("Plans", []))
