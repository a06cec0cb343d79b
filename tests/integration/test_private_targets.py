"""Deliveries to loopback and private addresses are refused unless explicitly allowed."""

from __future__ import annotations

import asyncio

import pytest

from svc.context import Context
from svc.events.emit import emit
from tests.conftest import Api
from tests.receiver import Receiver


@pytest.mark.settings(allow_private_targets=False)
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_private_target_is_blocked_and_logged(
    api: Api, ctx: Context, receiver: Receiver, host: str
) -> None:
    url = receiver.url("/private").replace("127.0.0.1", host)
    endpoint = await api.endpoint(url, ["payment.created"])
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    event = await emit(
        ctx,
        scope.org,
        scope.env,
        "payment.created",
        {"id": "pay_p", "status": "pending", "amount": 1},
    )

    for _ in range(100):
        _, body = await api.call("GET", f"/v1/webhook_endpoints/{endpoint['id']}/deliveries")
        assert isinstance(body, dict)
        if body["data"]:
            break
        await asyncio.sleep(0.05)
    record = body["data"][0]
    assert record["event_id"] == event.id
    assert record["outcome"] == "blocked" and record["error"] == "blocked"
    assert record["status_code"] is None
    assert receiver.received == []


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
