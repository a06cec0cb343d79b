"""The searchable delivery log: GET /v1/webhook_endpoints/{id}/deliveries and GET
/v1/deliveries filtered by outcome, response code or class, event type, event and time,
newest first with cursors bound to their filters, and kept to the key's scope."""

from __future__ import annotations

import time
from typing import Any

import pytest

from svc.context import Context
from svc.envelope import Event, iso_ms, new_event
from svc.events.model import Attempt
from svc.ids import new_id
from tests.conftest import Api
from tests.integration.test_listing import listed, refused

HOOK = "https://hooks.example.com/svc"
OTHER = "https://hooks.example.com/other"

pytestmark = pytest.mark.roles("api")


def attempt(
    event: Event, endpoint_id: str, at_ms: int, outcome: str, status: int | None
) -> Attempt:
    return Attempt(
        new_id("att"), event.id, event.type, endpoint_id, 1, "initial", outcome,
        status, None, 12.0, "", at_ms, None,
    )  # fmt: skip


async def logged(ctx: Context, api: Api) -> dict[str, Any]:
    """Two endpoints of the key's scope and a log of six attempts, one second apart."""
    first = str((await api.endpoint(HOOK, ["payment.created", "refund.succeeded"]))["id"])
    second = str((await api.endpoint(OTHER, ["payment.created"]))["id"])
    created = new_event("payment.created", "test", {"id": "pay_1"})
    refunded = new_event("refund.succeeded", "test", {"id": "re_1"})
    start = int(time.time() * 1000) - 60_000
    rows = [
        (created, first, "http_error", 503),
        (created, first, "success", 200),
        (refunded, first, "http_error", 500),
        (refunded, first, "timeout", None),
        (created, second, "http_error", 404),
        (refunded, first, "skipped_disabled", None),
    ]
    attempts = [
        attempt(event, endpoint, start + n * 1000, outcome, status)
        for n, (event, endpoint, outcome, status) in enumerate(rows)
    ]
    await ctx.deliveries.record(attempts)
    ids = [a.id for a in attempts]
    return {
        "first": first,
        "second": second,
        "ids": ids,
        "start": start,
        "events": (created, refunded),
    }


async def found(api: Api, path: str, *query: tuple[str, str]) -> list[str]:
    return [item["id"] for item in await listed(api, path, list(query))]


async def test_an_endpoints_log_is_searched_by_every_filter(api: Api, ctx: Context) -> None:
    log = await logged(ctx, api)
    ids = log["ids"]
    path = f"/v1/webhook_endpoints/{log['first']}/deliveries"
    created, refunded = log["events"]

    assert await found(api, path) == [ids[5], ids[3], ids[2], ids[1], ids[0]]
    assert await found(api, path, ("outcome", "http_error")) == [ids[2], ids[0]]
    assert await found(api, path, ("outcome", "skipped_disabled")) == [ids[5]]
    assert await found(api, path, ("status_code", "503")) == [ids[0]]
    assert await found(api, path, ("status_code", "5xx")) == [ids[2], ids[0]]
    assert await found(api, path, ("status_code", "2XX")) == [ids[1]]
    assert await found(api, path, ("event_type", "refund.succeeded")) == [ids[5], ids[3], ids[2]]
    assert await found(api, path, ("event_id", created.id)) == [ids[1], ids[0]]
    both = [("event_type", "refund.succeeded"), ("status_code", "5xx")]
    assert await found(api, path, *both) == [ids[2]]
    third = iso_ms(log["start"] + 2000)
    assert await found(api, path, ("created[gte]", third)) == [ids[5], ids[3], ids[2]]
    assert await found(api, path, ("created[lt]", third)) == [ids[1], ids[0]]
    assert refunded.id in {item["event_id"] for item in await listed(api, path, [])}


async def test_the_scopes_log_holds_every_endpoint_and_no_other_scope(
    api: Api, ctx: Context, make_api: Any
) -> None:
    log = await logged(ctx, api)
    ids = log["ids"]
    assert await found(api, "/v1/deliveries") == ids[::-1]
    assert await found(api, "/v1/deliveries", ("status_code", "4xx")) == [ids[4]]
    assert await found(api, "/v1/deliveries", ("outcome", "http_error")) == [ids[4], ids[2], ids[0]]

    stranger = await make_api(org="globex")
    assert await found(stranger, "/v1/deliveries") == []
    created, _ = log["events"]
    assert await found(stranger, "/v1/deliveries", ("event_id", created.id)) == []
    status, _ = await stranger.call("GET", f"/v1/webhook_endpoints/{log['first']}/deliveries")
    assert status == 404


async def test_a_cursor_belongs_to_its_filters(api: Api, ctx: Context) -> None:
    log = await logged(ctx, api)
    path = f"/v1/webhook_endpoints/{log['first']}/deliveries"
    query = {"status_code": "5xx", "limit": "1"}
    status, page = await api.call("GET", path, params=query)
    assert status == 200 and isinstance(page, dict) and page["has_more"]
    cursor = page["next_cursor"]
    status, following = await api.call("GET", path, params={**query, "cursor": cursor})
    assert status == 200 and isinstance(following, dict)
    assert [item["id"] for item in following["data"]] == [log["ids"][0]]
    for other in ({"status_code": "4xx"}, {}):
        params = {**other, "limit": "1", "cursor": cursor}
        assert await refused(api, path, list(params.items())) == [("cursor", "invalid_cursor")]
        assert await refused(api, "/v1/deliveries", list(params.items())) == [
            ("cursor", "invalid_cursor")
        ]


async def test_a_bad_filter_is_named(api: Api) -> None:
    endpoint_id = (await api.endpoint(HOOK, ["payment.created"]))["id"]
    cases = [
        ("outcome", "failed", "invalid_choice"),
        ("status_code", "5x", "invalid_status_code"),
        ("status_code", "600", "invalid_status_code"),
        ("status_code", "abc", "invalid_status_code"),
        ("event_type", "payment.lost", "unknown_event_type"),
        ("created[gte]", "yesterday", "invalid_time"),
        ("created[lt]", "2026-11-21T08:00:00", "invalid_time"),
    ]
    for path in (f"/v1/webhook_endpoints/{endpoint_id}/deliveries", "/v1/deliveries"):
        for name, value, code in cases:
            assert await refused(api, path, [(name, value)]) == [(name, code)], (name, value)
