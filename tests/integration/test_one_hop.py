"""One hop from event to delivery: dispatchers fan out themselves, a slow endpoint is handed
off instead of holding the event, endpoint changes reach them within a second, and the
scheduler is not needed for deliveries or retries."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from harness.receivers import Receiver
from svc.context import Context
from svc.events.flow import emit
from tests.conftest import Api


async def scope_org(ctx: Context, api: Api) -> str:
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    return scope.org


async def emit_succeeded(ctx: Context, org: str, n: int) -> str:
    data = {"id": f"pay_{n}", "status": "succeeded", "amount": n}
    return (await emit(ctx, org, "test", "payment.succeeded", data)).id


def event_ids(receiver: Receiver, path: str) -> list[str]:
    return [orjson.loads(r.body)["id"] for r in receiver.at(path)]


@pytest.mark.settings(handoff_after=0.3, delivery_timeout=2.0)
async def test_hanging_endpoint_does_not_hold_the_others(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    receiver.on("/hang", lambda _p, _n: None)
    for path in ("/hang", "/a", "/b"):
        await api.endpoint(receiver.url(path), ["payment.succeeded"])
    org = await scope_org(ctx, api)
    started = asyncio.get_running_loop().time()
    ids = [await emit_succeeded(ctx, org, n) for n in range(5)]
    await receiver.wait_for(
        lambda r: set(event_ids(receiver, "/a")) == set(event_ids(receiver, "/b")) == set(ids),
        timeout=5,
    )
    assert asyncio.get_running_loop().time() - started < 1.5
    # Each hanging delivery is handed off after 0.3 s, which lets its event be acked.
    for _ in range(40):
        if await handed_off(api) >= 5:
            break
        await asyncio.sleep(0.05)
    assert await handed_off(api) == 5


async def handed_off(api: Api) -> float:
    async with api.session.get(api.ops_url + "/metrics") as response:
        text = await response.text()
    [line] = [x for x in text.splitlines() if x.startswith("svc_deliveries_handed_off_total")]
    return float(line.split()[-1])


@pytest.mark.settings(handoff_after=0.3, delivery_timeout=3.0)
async def test_slow_delivery_handed_off_is_not_sent_twice(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    receiver.slow("/slow", 1.0)
    endpoint = await api.endpoint(receiver.url("/slow"), ["payment.succeeded"])
    org = await scope_org(ctx, api)
    event_id = await emit_succeeded(ctx, org, 1)
    await receiver.wait_for(lambda r: len(receiver.at("/slow")) >= 1, timeout=5)
    # The hand-off job runs once the delivery could no longer be in flight (3 s + 5 s).
    await asyncio.sleep(9)
    assert event_ids(receiver, "/slow") == [event_id]
    status, log = await api.call("GET", f"/v1/webhook_endpoints/{endpoint['id']}/deliveries")
    assert status == 200 and [a["outcome"] for a in log["data"]] == ["success"]  # type: ignore[index]


@pytest.mark.settings(endpoint_cache_ttl=60.0)
async def test_endpoint_changes_reach_dispatchers_within_a_second(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    first = await api.endpoint(receiver.url("/first"), ["payment.succeeded"])
    org = await scope_org(ctx, api)
    one = await emit_succeeded(ctx, org, 1)
    await receiver.wait_for(lambda r: event_ids(receiver, "/first") == [one])

    await api.endpoint(receiver.url("/second"), ["payment.succeeded"])
    await asyncio.sleep(1.0)
    two = await emit_succeeded(ctx, org, 2)
    await receiver.wait_for(lambda r: event_ids(receiver, "/second") == [two], timeout=5)

    status, _ = await api.call("DELETE", f"/v1/webhook_endpoints/{first['id']}")
    assert status == 200
    await asyncio.sleep(1.0)
    three = await emit_succeeded(ctx, org, 3)
    await receiver.wait_for(lambda r: event_ids(receiver, "/second") == [two, three], timeout=5)
    await asyncio.sleep(0.5)
    assert event_ids(receiver, "/first") == [one, two]


@pytest.mark.roles("api", "dispatcher")  # no scheduler at all
async def test_deliveries_and_retries_go_on_without_a_scheduler(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    receiver.on("/flaky", lambda _p, n: 503 if n == 1 else 204)
    await api.endpoint(receiver.url("/flaky"), ["payment.succeeded"])
    org = await scope_org(ctx, api)
    event_id = await emit_succeeded(ctx, org, 1)
    await receiver.wait_for(lambda r: len(receiver.at("/flaky")) >= 2, timeout=10)
    first, retry = receiver.at("/flaky")
    assert event_ids(receiver, "/flaky") == [event_id, event_id]
    assert (first.headers["Svc-Attempt"], retry.headers["Svc-Attempt"]) == ("1", "2")
    assert retry.at - first.at >= 0.9  # the ladder's 1 s step
