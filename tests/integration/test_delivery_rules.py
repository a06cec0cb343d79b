"""The dispatcher's side of endpoint settings: Retry-After, rate limits, ordered delivery,
two signatures while a rotated secret is valid, Standard Webhooks mode, disabled endpoints."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import replace
from typing import Any

import orjson
import pytest
import stripe
from standardwebhooks import Webhook
from yarl import URL

from harness.receivers import Receiver
from harness.servers.proxy import TcpProxy
from svc.context import Context
from svc.db.times import to_dt
from svc.envelope import Event
from svc.events.flow import emit
from svc.settings import Settings
from svc.signing import new_signing_secret, verify
from tests.conftest import Api, running_api


async def _scope(ctx: Context, api: Api) -> tuple[str, str]:
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    return scope.org, scope.env


async def _configure(ctx: Context, api: Api, endpoint_id: object, **columns: Any) -> None:
    """Change an endpoint's row and announce it, as the endpoint API does after its commit."""
    names = list(columns)
    sets = ", ".join(f"{name} = ${i + 2}" for i, name in enumerate(names))
    await ctx.db.execute(
        f"UPDATE webhook_endpoints SET {sets} WHERE id = $1", endpoint_id, *columns.values()
    )
    await ctx.redis.publish(ctx.keys.endpoint_changes, orjson.dumps(list(await _scope(ctx, api))))
    await asyncio.sleep(0.3)  # the notice reaches the dispatcher's cache


async def _emit(ctx: Context, api: Api, amount: int) -> Event:
    org, env = await _scope(ctx, api)
    data = {"id": f"pay_{amount}", "status": "pending", "amount": amount}
    return await emit(ctx, org, env, "payment.created", data)


@pytest.mark.settings(retry_ladder="1s,2s..20s")
async def test_retry_after_delays_the_retry_and_pauses_the_endpoint(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    receiver.on("/busy", lambda _p, n: 429 if n == 1 else 204)
    receiver.answer_with("/busy", {"Retry-After": "3"})
    await api.endpoint(receiver.url("/busy"), ["payment.created"])
    first = await _emit(ctx, api, 1)
    [refused] = await receiver.wait_for(lambda r: len(r) >= 1)
    second = await _emit(ctx, api, 2)  # would go at once, but the endpoint is paused
    received = await receiver.wait_for(lambda r: len(r) >= 3, timeout=15)
    later = received[1:]
    assert {orjson.loads(r.body)["id"] for r in later} == {first.id, second.id}
    assert all(r.at >= refused.at + 2.9 for r in later), [r.at - refused.at for r in later]
    retried = next(r for r in later if orjson.loads(r.body)["id"] == first.id)
    assert retried.headers["Svc-Attempt"] == "2"
    second_try = next(r for r in later if orjson.loads(r.body)["id"] == second.id)
    assert second_try.headers["Svc-Attempt"] == "1"  # paused, not failed


async def test_rate_limit_holds_across_the_burst(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    endpoint = await api.endpoint(receiver.url("/limited"), ["payment.created"])
    await _configure(ctx, api, endpoint["id"], rate_limit=5)
    for amount in range(1, 13):
        await _emit(ctx, api, amount)
    received = await receiver.wait_for(lambda r: len(r) >= 12, timeout=30)
    # Counted by the second each was sent in (its signature's ``t``, taken just after the
    # limit let it go): a receipt's own time may fall a moment into the next second.
    per_second = Counter(int(r.headers["Svc-Signature"].split(",")[0][2:]) for r in received)
    assert max(per_second.values()) <= 5, per_second
    assert len(per_second) >= 3  # 12 at 5 per second need three seconds of Unix time


@pytest.mark.servers
@pytest.mark.timeout(120)
async def test_rate_limit_counts_the_second_a_delivery_is_signed_in(settings: Settings) -> None:
    # Redis answers 0.4 s late: a delivery counted in one second is sent in the next, so a
    # limit that counts one second and signs with a later clock reading lets more through.
    redis = URL(settings.redis_url)
    async with TcpProxy(redis.host or "127.0.0.1", redis.port or 6379) as proxy:
        slow = replace(settings, redis_url=str(redis.with_host("127.0.0.1").with_port(proxy.port)))
        async with Receiver() as receiver, running_api(slow, "limited") as (ctx, api):
            endpoint = await api.endpoint(receiver.url("/limited"), ["payment.created"])
            await _configure(ctx, api, endpoint["id"], rate_limit=5)
            await asyncio.sleep(1)
            proxy.slow(0.2)
            for amount in range(1, 31):
                await _emit(ctx, api, amount)
                if amount % 6 == 0:
                    await asyncio.sleep(0.37)  # waves at changing points of the second
            received = await receiver.wait_for(lambda r: len(r) >= 30, timeout=60)
    per_second = Counter(int(r.headers["Svc-Signature"].split(",")[0][2:]) for r in received)
    assert max(per_second.values()) <= 5, sorted(per_second.items())


async def test_ordered_endpoint_gets_events_one_at_a_time_in_creation_order(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    # The first event fails twice; nothing behind it may overtake it meanwhile.
    receiver.on("/ordered", lambda _p, n: 503 if n <= 2 else 204)
    endpoint = await api.endpoint(receiver.url("/ordered"), ["payment.created"])
    await _configure(ctx, api, endpoint["id"], ordered=True)
    sent = [await _emit(ctx, api, amount) for amount in range(1, 6)]
    received = await receiver.wait_for(lambda r: len(r) >= 7, timeout=20)
    ids = [orjson.loads(r.body)["id"] for r in received]
    assert ids == [sent[0].id] * 3 + [e.id for e in sent[1:]]
    assert [r.headers["Svc-Attempt"] for r in received[:3]] == ["1", "2", "3"]
    for _ in range(50):
        if not await ctx.db.fetchval("SELECT count(*) FROM ordered_deliveries"):
            break
        await asyncio.sleep(0.1)
    assert await ctx.db.fetchval("SELECT count(*) FROM ordered_deliveries") == 0


async def test_a_rotated_secret_signs_beside_the_new_one(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    endpoint = await api.endpoint(receiver.url("/rotated"), ["payment.created"])
    new, old = new_signing_secret(), new_signing_secret()
    new_key, sealed_new = ctx.box.seal(new.encode(), str(endpoint["id"]))
    old_key, sealed_old = ctx.box.seal(old.encode(), str(endpoint["id"]))
    await _configure(
        ctx,
        api,
        endpoint["id"],
        secret=sealed_new,
        secret_key_id=new_key,
        previous_secret=sealed_old,
        previous_secret_key_id=old_key,
        previous_secret_expires_at=to_dt(int((time.time() + 3600) * 1000)),
    )
    await _emit(ctx, api, 7)
    [got] = await receiver.wait_for(lambda r: len(r) >= 1)
    header = got.headers["Svc-Signature"]
    assert header.count("v1=") == 2
    for secret in (new, old):
        verify(header, got.body, secret)
        # Stripe's own verifier accepts either secret too (receivers built for Stripe).
        stripe.WebhookSignature.verify_header(got.body.decode(), header, secret, tolerance=300)
    with pytest.raises(stripe.SignatureVerificationError):
        stripe.WebhookSignature.verify_header(
            got.body.decode(), header, new_signing_secret(), tolerance=300
        )


async def test_standard_webhooks_mode(api: Api, ctx: Context, receiver: Receiver) -> None:
    created = await api.endpoint(receiver.url("/standard"), ["payment.created"])
    await _configure(ctx, api, created["id"], signature_scheme="standard-webhooks")
    event = await _emit(ctx, api, 8)
    [got] = await receiver.wait_for(lambda r: len(r) >= 1)
    assert got.headers["webhook-id"] == event.id
    assert Webhook(str(created["secret"])).verify(got.body, got.headers)["id"] == event.id


async def test_a_disabled_endpoint_gets_no_new_jobs(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    off = await api.endpoint(receiver.url("/off"), ["payment.created"])
    await api.endpoint(receiver.url("/on"), ["payment.created"])
    await _configure(ctx, api, off["id"], disabled=True, disabled_reason="manual")
    await _emit(ctx, api, 9)
    await receiver.wait_for(lambda r: len(r) >= 1)
    await asyncio.sleep(0.5)
    assert [r.path for r in receiver.received] == ["/on"]


async def test_a_test_send_to_a_disabled_endpoint_is_refused(api: Api, ctx: Context) -> None:
    off = await api.endpoint("https://example.com/hook", ["payment.created"])
    await _configure(ctx, api, off["id"], disabled=True, disabled_reason="manual")
    status, body = await api.call("POST", f"/v1/webhook_endpoints/{off['id']}/test")
    assert status == 409 and isinstance(body, dict) and body["code"] == "endpoint_disabled"
