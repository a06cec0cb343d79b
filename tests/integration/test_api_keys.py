"""API keys over HTTP: made, listed, rolled and revoked; restricted keys; per-key rate limits."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

import aiohttp
import pytest

from harness.processes import spawn
from harness.servers.redis import PrivateRedis
from svc.context import Context
from svc.settings import Settings
from tests.conftest import Api, running_api


async def make_key(api: Api, **body: Any) -> dict[str, Any]:
    """A key made over the API with ``body`` (its answer, with its secret)."""
    status, made = await api.call("POST", "/v1/api_keys", json=body)
    assert status == 201, made
    assert isinstance(made, dict)
    return made


def as_key(api: Api, secret: str) -> Api:
    """``api``'s client, authenticated with ``secret`` instead."""
    return Api(api.session, secret)


async def new_key_client(api: Api, **body: Any) -> Api:
    """``api``'s client, authenticated with a key made with ``body``."""
    return as_key(api, (await make_key(api, **body))["secret"])


async def test_a_key_is_made_listed_read_and_its_secret_shown_once(api: Api) -> None:
    made = await make_key(api, name="till 3", permissions=["payments:write", "terminals:write"])
    assert made["object"] == "api_key" and made["id"].startswith("key_")
    assert made["secret"].startswith("svc_test_") and made["prefix"] == made["secret"][:12]
    assert made["permissions"] == ["payments:write", "terminals:write"]
    assert made["environment"] == "test" and made["revoked_at"] is None
    status, listed = await api.call("GET", "/v1/api_keys?limit=1")
    assert status == 200 and listed["has_more"] and listed["data"][0]["id"] == made["id"]
    status, read = await api.call("GET", f"/v1/api_keys/{made['id']}")
    assert status == 200 and "secret" not in read and "secret" not in listed["data"][0]
    assert read == {key: value for key, value in made.items() if key != "secret"} | {
        "last_used_at": read["last_used_at"]
    }

    status, _ = await as_key(api, made["secret"]).call("GET", "/v1/payments/pay_x")
    assert status == 404  # payments:write implies payments:read
    await asyncio.sleep(0.3)
    status, used = await api.call("GET", f"/v1/api_keys/{made['id']}")
    assert used["last_used_at"] is not None


async def test_a_restricted_key_is_refused_what_it_lacks(api: Api) -> None:
    till = await new_key_client(api, permissions=["payments:write"])
    status, refused = await till.call("GET", "/v1/webhook_endpoints")
    assert status == 403 and refused["code"] == "permission_denied"
    assert refused["permission"] == "webhooks:read" and "webhooks:read" in refused["detail"]
    status, refused = await till.call("POST", "/v1/api_keys", json={})
    assert status == 403 and refused["permission"] == "api_keys:write"

    manager = await new_key_client(api, permissions=["api_keys:write", "events:read"])
    status, refused = await manager.call("POST", "/v1/api_keys", json={})
    assert status == 403 and refused["permission"] == "full_access"
    wider = {"permissions": ["events:write"]}
    status, refused = await manager.call("POST", "/v1/api_keys", json=wider)
    assert status == 403 and refused["permission"] == "events:write"
    narrower = {"permissions": ["events:read"]}
    status, made = await manager.call("POST", "/v1/api_keys", json=narrower)
    assert status == 201 and made["permissions"] == ["events:read"]
    status, listed = await manager.call("GET", "/v1/api_keys")
    assert status == 200 and len(listed["data"]) == 4


async def test_bad_input_names_the_field(api: Api, make_api: Any) -> None:
    cases: list[tuple[dict[str, Any], str, str]] = [
        ({"permissions": ["payments:delete"]}, "permissions", "invalid_permission"),
        ({"permissions": "payments:read"}, "permissions", "invalid_type"),
        ({"expires_at": "2020-01-01T00:00:00Z"}, "expires_at", "in_the_past"),
        ({"expires_at": "2030-01-01T00:00:00"}, "expires_at", "invalid_time"),
        ({"name": "x" * 101}, "name", "too_long"),
        ({"colour": "red"}, "colour", "unknown_field"),
    ]
    for body, field, code in cases:
        status, problem = await api.call("POST", "/v1/api_keys", json=body)
        assert status == 422, body
        assert [(e["field"], e["code"]) for e in problem["errors"]] == [(field, code)], body
    made = await make_key(api)
    for seconds in (-1, 604_801, "60"):
        status, problem = await api.call(
            "POST", f"/v1/api_keys/{made['id']}/roll", json={"expire_previous_in": seconds}
        )
        assert status == 422 and problem["errors"][0]["field"] == "expire_previous_in"
    other = await make_api(org="another")
    status, problem = await other.call("GET", f"/v1/api_keys/{made['id']}")
    assert status == 404 and problem["code"] == "api_key_not_found"
    status, problem = await other.call("DELETE", f"/v1/api_keys/{made['id']}")
    assert status == 404


async def test_a_rolled_secret_works_until_it_expires_then_401(api: Api) -> None:
    made = await make_key(api)
    old = as_key(api, made["secret"])
    assert (await old.call("GET", "/v1/api_keys"))[0] == 200
    status, rolled = await api.call(
        "POST", f"/v1/api_keys/{made['id']}/roll", json={"expire_previous_in": 2}
    )
    assert status == 200 and rolled["id"] == made["id"] and rolled["secret"] != made["secret"]
    new = as_key(api, rolled["secret"])
    assert (await old.call("GET", "/v1/api_keys"))[0] == 200
    assert (await new.call("GET", "/v1/api_keys"))[0] == 200
    await asyncio.sleep(2.2)
    status, problem = await old.call("GET", "/v1/api_keys")
    assert status == 401 and problem["code"] == "invalid_api_key"
    assert (await new.call("GET", "/v1/api_keys"))[0] == 200

    status, rolled = await api.call("POST", f"/v1/api_keys/{made['id']}/roll")
    assert status == 200
    assert (await new.call("GET", "/v1/api_keys"))[0] == 401  # default: the old stops now


async def test_a_key_may_revoke_itself_and_is_refused_after(api: Api) -> None:
    made = await make_key(api)
    own = as_key(api, made["secret"])
    status, revoked = await own.call("DELETE", f"/v1/api_keys/{made['id']}")
    assert status == 200 and revoked["revoked_at"] is not None
    status, problem = await own.call("GET", "/v1/api_keys")
    assert status == 401 and problem["code"] == "invalid_api_key"
    status, problem = await api.call("POST", f"/v1/api_keys/{made['id']}/roll")
    assert status == 409 and problem["code"] == "api_key_revoked"
    status, read = await api.call("GET", f"/v1/api_keys/{made['id']}")
    assert status == 200 and read["revoked_at"] == revoked["revoked_at"]


async def test_an_expired_key_answers_401(api: Api) -> None:
    soon = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 2))
    made = await make_key(api, expires_at=soon)
    short = as_key(api, made["secret"])
    assert (await short.call("GET", "/v1/api_keys"))[0] == 200
    await asyncio.sleep(2.5)
    status, problem = await short.call("GET", "/v1/api_keys")
    assert status == 401 and problem["code"] == "invalid_api_key"


@pytest.mark.timeout(90)
@pytest.mark.settings(api_key_cache_ttl=60.0)
async def test_revoking_stops_the_key_on_every_api_process_within_a_second(
    settings: Settings, ctx: Context
) -> None:
    """Each process caches resolved keys for a minute here: only the notice can stop them."""
    secret, _ = await ctx.api_keys.create("test", "two-processes")
    processes = [await spawn(settings, "api") for _ in range(2)]
    try:
        async with aiohttp.ClientSession() as session:
            apis = [Api(session, secret) for _ in processes]
            bases = [f"http://127.0.0.1:{port}" for _, port in processes]
            for base, one in zip(bases, apis, strict=True):
                assert (await one.call("GET", f"{base}/v1/api_keys"))[0] == 200
            status, listed = await apis[0].call("GET", f"{bases[0]}/v1/api_keys")
            key_id = listed["data"][0]["id"]
            status, _ = await apis[0].call("DELETE", f"{bases[0]}/v1/api_keys/{key_id}")
            assert status == 200
            revoked_at = time.monotonic()
            while (await apis[1].call("GET", f"{bases[1]}/v1/api_keys"))[0] != 401:
                assert time.monotonic() - revoked_at < 1.0, "still answered after 1 s"
                await asyncio.sleep(0.05)
    finally:
        for process, _ in processes:
            process.terminate()
            await process.wait()


@pytest.mark.settings(rate_limit_test=5, rate_limit_live=0)
async def test_a_key_beyond_its_rate_gets_429_with_retry_after(api: Api, make_api: Any) -> None:
    async def one() -> tuple[int, dict[str, str], Any]:
        async with api.session.get("/v1/api_keys", headers=api.headers) as response:
            return response.status, dict(response.headers), await response.json()

    # Sent together, so that all six are decided within a fifth of a second however busy the
    # machine is (one more request is given back every fifth of a second).
    answers = sorted(await asyncio.gather(*(one() for _ in range(6))), key=lambda a: a[0])
    assert [status for status, _, _ in answers] == [200] * 5 + [429]
    assert sorted(h["RateLimit-Remaining"] for _, h, _ in answers[:5]) == ["0", "1", "2", "3", "4"]
    assert all(h["RateLimit-Limit"] == "5" for _, h, _ in answers)
    status, headers, problem = answers[5]
    assert problem["code"] == "rate_limited" and int(headers["Retry-After"]) >= 1
    assert int(headers["RateLimit-Reset"]) >= 1
    async with api.session.get("/health") as response:
        assert response.status == 200 and "RateLimit-Limit" not in response.headers
    other = await make_api()  # another key has a bucket of its own
    assert (await other.call("GET", "/v1/api_keys"))[0] == 200
    live = await make_api(env="live")  # 0: live keys unlimited here
    for _ in range(8):
        async with live.session.get("/v1/api_keys", headers=live.headers) as response:
            assert response.status == 200 and "RateLimit-Limit" not in response.headers
    await asyncio.sleep(0.25)  # a fifth of a second gives one more request back
    assert (await api.call("GET", "/v1/api_keys"))[0] == 200


@pytest.mark.servers
@pytest.mark.timeout(90)
async def test_without_redis_requests_pass_and_are_counted(settings: Settings) -> None:
    redis = PrivateRedis()
    await redis.start()
    own = replace(settings, redis_url=redis.url, rate_limit_test=3)
    try:
        async with running_api(own, "redisless", ("api",)) as (ctx, api):
            statuses = [(await api.call("GET", "/v1/api_keys"))[0] for _ in range(4)]
            assert statuses == [200, 200, 200, 429]
            await redis.stop()
            statuses = [(await api.call("GET", "/v1/api_keys"))[0] for _ in range(6)]
            assert statuses == [200] * 6
            async with api.session.get(api.ops_url + "/metrics") as response:
                metrics = await response.text()
            line = next(
                line
                for line in metrics.splitlines()
                if line.startswith("svc_rate_limit_bypassed_total ")
            )
            assert float(line.split()[1]) >= 6
    finally:
        await redis.stop()
