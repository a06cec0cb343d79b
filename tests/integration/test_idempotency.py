"""Idempotency keys: required on payment creation, replayed, scoped, and race-free."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import orjson
import pytest

from harness.receivers import Receiver
from svc.context import Context
from svc.idempotency import Stored, fingerprint
from tests.conftest import Api
from tests.integration.test_payments import create

FORM = "application/x-www-form-urlencoded"
BODY = "amount=2450&currency=CHF&channel=online&success_url=https%3A%2F%2Fshop.example%2F"


async def post_raw(api: Api, key: str, body: str = BODY) -> tuple[int, Any, dict[str, str]]:
    headers = {**api.headers, "Idempotency-Key": key, "Content-Type": FORM}
    async with api.session.post("/v1/payments", data=body, headers=headers) as response:
        return response.status, await response.json(content_type=None), dict(response.headers)


async def test_key_is_required_on_payment_creation(api: Api) -> None:
    status, body = await api.call("POST", "/v1/payments", data={"amount": "2450"})
    assert status == 400
    assert body["code"] == "idempotency_key_missing"
    assert body["errors"][0]["field"] == "Idempotency-Key"


async def test_replay_returns_first_response(api: Api) -> None:
    key = uuid.uuid4().hex
    first = await post_raw(api, key)
    again = await post_raw(api, key)
    assert first[0] == again[0] == 201
    assert again[1] == first[1]
    assert again[2]["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first[2]


async def test_same_key_other_parameters_is_rejected(api: Api) -> None:
    key = uuid.uuid4().hex
    assert (await post_raw(api, key))[0] == 201
    status, body, _ = await post_raw(api, key, BODY.replace("2450", "2451"))
    assert status == 422
    assert body["code"] == "idempotency_key_reused"
    assert body["errors"][0]["field"] == "Idempotency-Key"


async def _held(ctx: Context, api: Api, key: str) -> tuple[Any, Any, str]:
    """The caller's key and scope, and the fingerprint of ``post_raw``'s request."""
    found = await ctx.api_keys.authenticate(api.key)
    assert found is not None
    return found.key, found.key.scope, fingerprint("POST", "/v1/payments", FORM, BODY.encode())


async def test_a_retry_while_the_first_runs_waits_and_replays_its_answer(
    api: Api, ctx: Context
) -> None:
    key = uuid.uuid4().hex
    caller, scope, fp = await _held(ctx, api, key)
    first = b'{"id":"pay_0first00000000000000000000"}'
    async with ctx.db.transaction() as unit:  # as if a first request were about to commit
        answer = Stored(201, first, "application/json")
        await ctx.idempotency.remember(unit, scope, caller, key, fp, answer)
        await unit.fetchval("SELECT 1")  # its record is written, not yet committed
        retry = asyncio.create_task(post_raw(api, key))
        await asyncio.sleep(0.5)
        assert not retry.done()  # it waits for the first rather than answering 409
    status, body, headers = await retry
    assert (status, headers["Idempotent-Replayed"]) == (201, "true")
    assert body == orjson.loads(first)


async def test_a_retry_while_the_first_runs_goes_ahead_when_the_first_fails(
    api: Api, ctx: Context
) -> None:
    key = uuid.uuid4().hex
    caller, scope, fp = await _held(ctx, api, key)
    with pytest.raises(RuntimeError):
        async with ctx.db.transaction() as unit:
            answer = Stored(201, b"{}", "application/json")
            await ctx.idempotency.remember(unit, scope, caller, key, fp, answer)
            await unit.fetchval("SELECT 1")
            retry = asyncio.create_task(post_raw(api, key))
            await asyncio.sleep(0.5)
            assert not retry.done()
            raise RuntimeError("the first request failed")
    status, body, headers = await retry
    assert status == 201 and "Idempotent-Replayed" not in headers
    assert body["id"].startswith("pay_")


async def test_failed_request_releases_its_key(api: Api) -> None:
    key = uuid.uuid4().hex
    status, body = await create(api, key, amount="24.50")
    assert status == 422 and body["errors"][0]["field"] == "amount"
    status, body = await create(api, key)
    assert status == 201


async def test_keys_are_scoped_per_organisation_and_environment(make_api: Any) -> None:
    key = uuid.uuid4().hex
    results = []
    for env, org in (("test", "acme"), ("live", "acme"), ("test", "globex")):
        api: Api = await make_api(env=env, org=org)
        status, body, headers = await post_raw(api, key)
        assert status == 201 and "Idempotent-Replayed" not in headers
        results.append(body["id"])
    assert len(set(results)) == 3


async def test_fifty_concurrent_identical_requests_make_one_payment(
    api: Api, receiver: Receiver
) -> None:
    await api.endpoint(receiver.url("/hook"), ["payment.created"])
    key = uuid.uuid4().hex
    answers = await asyncio.gather(*(post_raw(api, key) for _ in range(50)))
    assert {status for status, _, _ in answers} == {201}
    ids = {body["id"] for _, body, _ in answers}
    assert len(ids) == 1
    assert sum("Idempotent-Replayed" not in headers for _, _, headers in answers) == 1
    await receiver.wait_for(lambda r: len(r) >= 1)
    await asyncio.sleep(1.0)  # any second payment's event would arrive by now
    created = [orjson.loads(r.body)["data"]["id"] for r in receiver.received]
    assert created == list(ids)


async def test_key_is_honoured_on_other_posts(api: Api, receiver: Receiver) -> None:
    key = uuid.uuid4().hex
    request = {"url": receiver.url("/hook"), "events": ["payment.created"]}
    headers = {"Idempotency-Key": key}
    first = await api.call("POST", "/v1/webhook_endpoints", json=request, headers=headers)
    again = await api.call("POST", "/v1/webhook_endpoints", json=request, headers=headers)
    assert first[0] == again[0] == 201 and first[1] == again[1]
    status, listing = await api.call("GET", "/v1/webhook_endpoints")
    assert len(listing["data"]) == 1
    # Optional elsewhere: without a key the request simply runs.
    assert (await api.call("POST", "/v1/webhook_endpoints", json=request))[0] == 201


async def test_invalid_key_is_rejected(api: Api) -> None:
    status, body = await create(api, "x" * 256)
    assert status == 400 and body["code"] == "idempotency_key_invalid"
