"""Limits a hostile client meets: made-up API keys, open payment streams, webhook endpoints
and recovered events.

A made-up key is looked up in PostgreSQL once per API process and time to live, and the
failures of one client address are counted in Redis: beyond ``SVC_FAILED_AUTH_LIMIT`` the
address gets 429 ``too_many_failed_auth`` before any look-up, while clients of other
addresses, and keys the process has already seen work, are answered as ever.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from harness.processes import spawn
from svc.context import Context
from svc.envelope import iso_ms
from svc.keys.model import Authenticated
from svc.keys.store import ApiKeys
from svc.settings import Settings
from tests.conftest import Api, Running
from tests.dashboard.conftest import Dashboard
from tests.integration.test_endpoint_recovery import (
    HOUR,
    MINUTE,
    attempt,
    backdate,
    now_ms,
    org_of,
    stored_event,
)
from tests.integration.test_payments import create

HOOK = "https://hooks.example.com/limits"
ENDPOINTS = "/v1/webhook_endpoints"


def made_up() -> str:
    """A key of the right shape that no organisation has."""
    return f"svc_test_{secrets.token_urlsafe(24)}"


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every secret the API processes of this test look up in PostgreSQL, in order."""
    seen: list[str] = []
    authenticate = ApiKeys.authenticate

    async def counted(self: ApiKeys, secret: str) -> Authenticated | None:
        seen.append(secret)
        return await authenticate(self, secret)

    monkeypatch.setattr(ApiKeys, "authenticate", counted)
    return seen


async def status_of(
    session: aiohttp.ClientSession, key: str, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any], dict[str, str]]:
    auth = {"Authorization": f"Bearer {key}", **(headers or {})}
    async with session.get(ENDPOINTS, headers=auth) as response:
        return response.status, await response.json(content_type=None), dict(response.headers)


@pytest.mark.settings(failed_auth_limit=100)
async def test_a_made_up_key_costs_one_lookup_per_time_to_live(
    api: Api, lookups: list[str]
) -> None:
    key = made_up()
    for _ in range(5):
        status, problem, _ = await status_of(api.session, key)
        assert status == 401 and problem["code"] == "invalid_api_key"
    assert lookups.count(key) == 1


@pytest.mark.settings(failed_auth_limit=100, api_key_cache_ttl=0.3)
async def test_a_cached_miss_runs_out_with_the_time_to_live(api: Api, lookups: list[str]) -> None:
    key = made_up()
    assert (await status_of(api.session, key))[0] == 401
    await asyncio.sleep(0.4)
    assert (await status_of(api.session, key))[0] == 401
    assert lookups.count(key) == 2


@pytest.mark.settings(failed_auth_limit=5, failed_auth_window=60.0)
async def test_a_flood_of_made_up_keys_is_refused_and_a_known_key_still_served(
    api: Api, lookups: list[str]
) -> None:
    assert (await status_of(api.session, api.key))[0] == 200  # a client at work
    flood = [made_up() for _ in range(20)]
    answers = [await status_of(api.session, key) for key in flood]
    assert [status for status, _, _ in answers] == [401] * 5 + [429] * 15
    status, problem, headers = answers[-1]
    assert problem["code"] == "too_many_failed_auth"
    assert 1 <= int(headers["Retry-After"]) <= 60
    assert [key for key in lookups if key in flood] == flood[:5]  # refused ones cost no query
    assert (await status_of(api.session, api.key))[0] == 200


@pytest.mark.settings(failed_auth_limit=3, trusted_proxy_hops=1)
async def test_behind_a_trusted_proxy_each_forwarded_address_is_counted_alone(
    make_api: Callable[..., Awaitable[Api]],
) -> None:
    attacker = await make_api()
    client = await make_api(org="bystander")  # a key this process has never seen
    hostile = [{"X-Forwarded-For": f"10.9.{n}.1, 203.0.113.7"} for n in range(6)]
    statuses = [(await status_of(attacker.session, made_up(), h))[0] for h in hostile]
    assert statuses == [401] * 3 + [429] * 3  # what the proxy appended is what counts
    own = {"X-Forwarded-For": "198.51.100.2"}
    assert (await status_of(client.session, client.key, own))[0] == 200
    assert (await status_of(client.session, made_up(), own))[0] == 401


@pytest.mark.settings(failed_auth_limit=3)
async def test_without_a_trusted_proxy_forwarded_addresses_are_ignored(api: Api) -> None:
    hostile = [{"X-Forwarded-For": f"203.0.113.{n}"} for n in range(5)]
    statuses = [(await status_of(api.session, made_up(), h))[0] for h in hostile]
    assert statuses == [401] * 3 + [429] * 2


@pytest.fixture
async def second_api(settings: Settings) -> AsyncIterator[str]:
    """Another API process of the same install (same namespace, Redis and database)."""
    process, port = await spawn(settings, "api")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        await process.wait()


@pytest.mark.timeout(60)
@pytest.mark.settings(failed_auth_limit=3)
async def test_the_failures_of_an_address_count_on_every_api_process(
    api: Api, second_api: str
) -> None:
    statuses = [(await status_of(api.session, made_up()))[0] for _ in range(3)]
    assert statuses == [401] * 3
    async with aiohttp.ClientSession(base_url=second_api) as other:
        status, problem, _ = await status_of(other, made_up())
    assert status == 429 and problem["code"] == "too_many_failed_auth"


# Open payment streams per key.


def stream_path(payment: dict[str, Any]) -> str:
    return f"/v1/payments/{payment['id']}/stream"


@pytest.mark.settings(max_streams_per_key=2)
async def test_a_key_holds_at_most_its_streams_open(
    api: Api, make_api: Callable[..., Awaitable[Api]]
) -> None:
    _, payment = await create(api)
    path = stream_path(payment)
    first = await api.session.ws_connect(path, headers=api.headers)
    second = await api.session.ws_connect(path, headers=api.headers)
    try:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await api.session.ws_connect(path, headers=api.headers)
        assert refused.value.status == 429
        status, problem = await api.call("GET", path)
        assert status == 429 and problem["code"] == "too_many_streams"
        other = await make_api()  # another key of the same organisation has its own
        async with other.session.ws_connect(path, headers=other.headers) as ws:
            assert (await ws.receive_json())["type"] == "payment"
        await first.close()
        for _ in range(50):  # the server sees the close a moment later
            status, _ = await api.call("GET", path)
            if status != 429:
                break
            await asyncio.sleep(0.05)
        async with api.session.ws_connect(path, headers=api.headers) as ws:
            assert (await ws.receive_json())["type"] == "payment"
    finally:
        await first.close()
        await second.close()


# Webhook endpoints per scope.


async def make_endpoint(api: Api) -> tuple[int, dict[str, Any]]:
    body = {"url": HOOK, "events": ["payment.succeeded"]}
    status, answer = await api.call("POST", ENDPOINTS, json=body)
    assert isinstance(answer, dict)
    return status, answer


@pytest.mark.settings(max_endpoints_per_scope=3)
async def test_a_scope_has_at_most_its_endpoints(
    api: Api, make_api: Callable[..., Awaitable[Api]]
) -> None:
    made = [await make_endpoint(api) for _ in range(3)]
    assert [status for status, _ in made] == [201] * 3
    status, problem = await make_endpoint(api)
    assert status == 422 and problem["code"] == "too_many_endpoints"
    live = await make_api(env="live")  # the live environment is a scope of its own
    assert (await make_endpoint(live))[0] == 201
    assert (await api.call("DELETE", f"{ENDPOINTS}/{made[0][1]['id']}"))[0] == 200
    assert (await make_endpoint(api))[0] == 201


@pytest.mark.settings(max_endpoints_per_scope=3)
async def test_concurrent_creations_never_pass_the_cap(api: Api) -> None:
    answers = await asyncio.gather(*(make_endpoint(api) for _ in range(10)))
    assert sorted(status for status, _ in answers) == [201] * 3 + [422] * 7
    _, listed = await api.call("GET", f"{ENDPOINTS}?limit=100")
    assert isinstance(listed, dict) and len(listed["data"]) == 3


@pytest.mark.settings(max_endpoints_per_scope=1, dashboard_secure_cookies=False)
async def test_the_dashboard_refuses_an_endpoint_beyond_the_cap(api: Api, service: Running) -> None:
    assert (await make_endpoint(api))[0] == 201
    dashboard = Dashboard(service.base_url)
    try:
        assert (await dashboard.sign_in(api.key)).status == 303
        form = await dashboard.get("/dashboard/webhooks/new")
        fields = {"csrf_token": form.token, "url": HOOK, "events": "payment.succeeded"}
        page = await dashboard.post("/dashboard/webhooks", fields)
        assert page.status == 422 and "delete one" in page.text
    finally:
        await dashboard.session.close()


# Events one recover call resends.


@pytest.mark.roles("api")  # no scheduler: the staged resends stay staged
@pytest.mark.settings(max_recover_events=2)
async def test_a_recover_call_resends_at_most_its_events(api: Api, ctx: Context) -> None:
    org = await org_of(ctx, api)
    endpoint_id = (await api.endpoint(HOOK, ["payment.created"]))["id"]
    since = now_ms() - HOUR
    await backdate(ctx, since - HOUR)
    events = [await stored_event(ctx, org, since + k * MINUTE) for k in range(5)]
    await ctx.deliveries.record([attempt(e, endpoint_id, since + 10 * MINUTE) for e in events])
    path = f"{ENDPOINTS}/{endpoint_id}/recover"
    status, answer = await api.call("POST", path, json={"since": iso_ms(since)})
    assert status == 202, answer
    assert isinstance(answer, dict) and (answer["events"], answer["has_more"]) == (2, True)
