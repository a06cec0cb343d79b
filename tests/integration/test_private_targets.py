"""Deliveries to loopback and private addresses are refused unless explicitly allowed: at
creation when the URL alone shows it, at delivery otherwise."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from harness.receivers import Receiver
from svc.context import Context
from svc.envelope import Event
from svc.events.flow import emit
from svc.webhooks.model import Endpoint
from tests.conftest import Api


@pytest.mark.settings(allow_private_targets=False)
@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "localhost", "LOCALHOST.", "[::1]", "10.0.0.7", "169.254.169.254", "127.1"],
)
async def test_private_target_is_refused_at_creation(
    api: Api, receiver: Receiver, host: str
) -> None:
    url = f"http://{host}:{receiver.port}/private"
    status, body = await api.call(
        "POST", "/v1/webhook_endpoints", json={"url": url, "events": ["payment.created"]}
    )
    assert status == 422, body
    assert body["code"] == "validation_error"
    assert [(e["field"], e["code"]) for e in body["errors"]] == [("url", "private_target")]
    _, listed = await api.call("GET", "/v1/webhook_endpoints")
    assert isinstance(listed, dict) and listed["data"] == []


@pytest.mark.settings(allow_private_targets=False)
async def test_public_target_is_accepted_at_creation(api: Api) -> None:
    await api.endpoint("https://shop.example/hooks", ["payment.created"])


@pytest.mark.settings(allow_private_targets=False)
@pytest.mark.parametrize(
    "host", ["127.0.0.1", "localhost", "127.1", "2130706433", "0x7f.1", "017700000001"]
)
async def test_stored_private_target_is_blocked_and_logged(
    api: Api, ctx: Context, receiver: Receiver, host: str
) -> None:
    """An endpoint stored without creation's check (an old row, or one another version wrote)
    is still never reached: every host creation refuses, short IPv4 forms included, is
    refused before sending, other names after DNS."""
    endpoint, event = await _stored_endpoint_with_event(api, ctx, receiver, host)
    record = await first_delivery(api, endpoint.id)
    assert record["event_id"] == event.id
    assert record["outcome"] == "blocked"
    assert record["error"].endswith(" is not a public address: deliveries to it are refused")
    assert record["status_code"] is None
    assert receiver.received == []


@pytest.mark.settings(allow_private_targets=False)
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost:3000", "10.0.0.7"])
async def test_private_success_url_is_accepted(api: Api, host: str) -> None:
    """success_url is where the customer's browser returns, not a delivery target."""
    form = {"amount": "2450", "success_url": f"http://{host}/done"}
    headers = {"Idempotency-Key": uuid.uuid4().hex}
    status, body = await api.call("POST", "/v1/payments", data=form, headers=headers)
    assert status == 201, body
    assert isinstance(body, dict) and body["success_url"] == f"http://{host}/done"


async def test_private_target_allowed_when_configured(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    await api.endpoint(receiver.url("/ok").replace("127.0.0.1", "localhost"), ["payment.created"])
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    await emit(
        ctx, scope.org, scope.env, "payment.created", {"id": "p", "status": "pending", "amount": 1}
    )
    await receiver.wait_for(lambda r: len(r) == 1)


@pytest.mark.parametrize("host", ["localhost", "0x7f.1"])
async def test_stored_private_target_is_reached_when_allowed(
    api: Api, ctx: Context, receiver: Receiver, host: str
) -> None:
    endpoint, _ = await _stored_endpoint_with_event(api, ctx, receiver, host)
    await receiver.wait_for(lambda r: len(r) == 1)
    assert (await first_delivery(api, endpoint.id))["outcome"] == "success"


async def _stored_endpoint_with_event(
    api: Api, ctx: Context, receiver: Receiver, host: str
) -> tuple[Endpoint, Event]:
    """An endpoint on the receiver under ``host``, written to the database directly (as an
    old row would be, never checked by creation), and one event it subscribes to."""
    url = receiver.url("/private").replace("127.0.0.1", host)
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    endpoint = await ctx.endpoints.create(ctx.db, scope, url, ["payment.created"])
    event = await emit(
        ctx,
        scope.org,
        scope.env,
        "payment.created",
        {"id": "pay_p", "status": "pending", "amount": 1},
    )
    return endpoint, event


async def first_delivery(api: Api, endpoint_id: str) -> dict[str, Any]:
    """The first delivery the endpoint's log shows, waited for up to ten seconds."""
    for _ in range(200):
        _, body = await api.call("GET", f"/v1/webhook_endpoints/{endpoint_id}/deliveries")
        assert isinstance(body, dict)
        if body["data"]:
            record: dict[str, Any] = body["data"][0]
            return record
        await asyncio.sleep(0.05)
    raise AssertionError(f"no delivery of {endpoint_id} was logged")
