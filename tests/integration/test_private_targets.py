"""Deliveries to loopback and private addresses are refused unless explicitly allowed: at
creation when the URL alone shows it, at delivery otherwise."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from svc.context import Context
from svc.events.emit import emit
from tests.conftest import Api
from tests.receiver import Receiver


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
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_stored_private_target_is_blocked_and_logged(
    api: Api, ctx: Context, receiver: Receiver, host: str
) -> None:
    """An endpoint stored before creation refused such URLs is still never reached: the
    literal before sending, the host name after DNS."""
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

    for _ in range(100):
        _, body = await api.call("GET", f"/v1/webhook_endpoints/{endpoint.id}/deliveries")
        assert isinstance(body, dict)
        if body["data"]:
            break
        await asyncio.sleep(0.05)
    record = body["data"][0]
    assert record["event_id"] == event.id
    assert record["outcome"] == "blocked" and record["error"] == "blocked"
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
