"""Fan-out: every subscribed endpoint of the event's scope gets it, no one else does."""

from __future__ import annotations

import asyncio

from harness.receivers import Receiver
from svc.context import Context
from svc.events.flow import emit
from svc.signing import verify
from tests.conftest import Api


async def test_fan_out_follows_subscriptions_and_scope(
    make_api: object, ctx: Context, receiver: Receiver
) -> None:
    api: Api = await make_api()  # type: ignore[operator]
    other_org: Api = await make_api(org="other")  # type: ignore[operator]
    live: Api = await make_api(env="live")  # type: ignore[operator]
    a = await api.endpoint(receiver.url("/a"), ["payment.succeeded", "payment.failed"])
    b = await api.endpoint(receiver.url("/b"), ["payment.succeeded"])
    await api.endpoint(receiver.url("/c"), ["payment.failed"])
    await other_org.endpoint(receiver.url("/other-org"), ["payment.succeeded"])
    await live.endpoint(receiver.url("/live"), ["payment.succeeded"])
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None

    event = await emit(
        ctx,
        scope.org,
        "test",
        "payment.succeeded",
        {"id": "pay_1", "status": "succeeded", "amount": 100},
    )
    await receiver.wait_for(lambda r: {x.path for x in r} >= {"/a", "/b"})
    await asyncio.sleep(0.5)  # give a wrong delivery the time to show up

    assert sorted(x.path for x in receiver.received) == ["/a", "/b"]
    for request, endpoint in ((receiver.at("/a")[0], a), (receiver.at("/b")[0], b)):
        assert request.body == event.body
        assert request.headers["Svc-Event-Id"] == event.id
        verify(request.headers["Svc-Signature"], request.body, str(endpoint["secret"]))


async def test_deleted_endpoint_gets_nothing(api: Api, ctx: Context, receiver: Receiver) -> None:
    gone = await api.endpoint(receiver.url("/gone"), ["payment.created"])
    await api.endpoint(receiver.url("/kept"), ["payment.created"])
    status, _ = await api.call("DELETE", f"/v1/webhook_endpoints/{gone['id']}")
    assert status == 200
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    await emit(
        ctx, scope.org, "test", "payment.created", {"id": "pay_2", "status": "pending", "amount": 5}
    )
    await receiver.wait_for(lambda r: len(r) >= 1)
    await asyncio.sleep(0.5)
    assert [x.path for x in receiver.received] == ["/kept"]
