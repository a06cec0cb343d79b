"""The system of record is PostgreSQL: a cache flush loses nothing, a database outage is a
503 that heals by itself, a crash between commit and reply never doubles a payment, and
concurrent transitions of one payment apply once."""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from dataclasses import replace
from typing import Any

import aiohttp
import orjson
import pytest
from redis.asyncio import Redis

from harness.database import create_migrated
from harness.processes import spawn
from harness.receivers import Receiver
from harness.servers.postgres import private_postgres
from harness.servers.proxy import TcpProxy
from harness.servers.redis import PrivateRedis
from svc.context import Context
from svc.payments import flow
from svc.settings import Settings
from tests.conftest import Api, Running, running_api
from tests.integration.test_idempotency import post_raw


def created_ids(receiver: Receiver) -> set[str]:
    return {
        orjson.loads(r.body)["data"]["id"]
        for r in receiver.received
        if r.headers["Svc-Event-Type"] == "payment.created"
    }


async def create_payments(api: Api, count: int) -> list[str]:
    async def one() -> str:
        status, body, _ = await post_raw(api, uuid.uuid4().hex)
        assert status == 201, body
        return str(body["id"])

    return list(await asyncio.gather(*(one() for _ in range(count))))


@pytest.mark.servers
@pytest.mark.timeout(90)
async def test_flushall_mid_load_loses_no_record(settings: Settings, receiver: Receiver) -> None:
    async with PrivateRedis() as redis:
        own = replace(settings, redis_url=redis.url)
        async with running_api(own, "flush") as (ctx, api):
            endpoint = await api.endpoint(receiver.url("/flush"), ["payment.created"])
            before = await create_payments(api, 30)
            # A long poll open across the flush still wakes on the payment's change.
            waiting = asyncio.create_task(api.call("GET", f"/v1/payments/{before[0]}?wait=20"))
            await asyncio.sleep(0.3)
            flusher = Redis.from_url(redis.url)
            await flusher.flushall()
            await flusher.aclose()
            after = await create_payments(api, 30)
            await flow.move(ctx, before[0], "canceled", {"cancel_reason": "requested"})
            status, polled = await asyncio.wait_for(waiting, 10)
            assert status == 200 and polled["status"] == "canceled"

            for payment_id in before + after:
                status, body = await api.call("GET", f"/v1/payments/{payment_id}")
                assert status == 200, body
            status, listed = await api.call("GET", "/v1/webhook_endpoints")
            assert [e["id"] for e in listed["data"]] == [endpoint["id"]]
            await receiver.wait_for(
                lambda r: created_ids(receiver) >= set(before + after), timeout=30
            )


@pytest.mark.servers
@pytest.mark.timeout(120)
async def test_database_outage_is_503_and_heals_by_itself(settings: Settings) -> None:
    with private_postgres() as server:
        url = await create_migrated(server.admin_url)
        own = replace(settings, database_url=url)
        async with running_api(own, "outage", ("api",)) as (_, api):
            session = api.session
            [payment_id] = await create_payments(api, 1)

            await asyncio.to_thread(server.stop)
            status, body, headers = await post_raw(api, uuid.uuid4().hex)
            assert status == 503, body
            assert body["code"] == "service_unavailable"
            assert headers["Retry-After"].isdigit()
            assert headers["Content-Type"] == "application/problem+json"
            status, body = await api.call("GET", f"/v1/payments/{payment_id}")
            assert status == 503 and body["code"] == "service_unavailable"
            async with session.get(api.ops_url + "/ready") as response:
                assert response.status == 503

            await asyncio.to_thread(server.start)
            healed = await _eventually_created(api)
            assert healed
            status, body = await api.call("GET", f"/v1/payments/{payment_id}")
            assert status == 200 and body["id"] == payment_id
            async with session.get(api.ops_url + "/ready") as response:
                assert response.status == 200


async def _eventually_created(api: Api, within: float = 15.0) -> bool:
    deadline = asyncio.get_running_loop().time() + within
    while asyncio.get_running_loop().time() < deadline:
        status, _, _ = await post_raw(api, uuid.uuid4().hex)
        if status == 201:
            return True
        assert status == 503
        await asyncio.sleep(0.2)
    return False


@pytest.mark.servers
@pytest.mark.timeout(90)
@pytest.mark.roles("scheduler", "dispatcher")  # the API runs as child processes
async def test_crash_between_commit_and_reply_never_doubles_a_payment(
    settings: Settings, ctx: Context, service: Running, receiver: Receiver
) -> None:
    key, scope = await ctx.api_keys.create("test", "crash")
    await ctx.endpoints.create(ctx.db, scope, receiver.url("/crash"), ["payment.created"])
    amqp = settings.amqp_url.rsplit("@", 1)[1].split("/")[0]
    host, port = amqp.split(":")
    async with TcpProxy(host, int(port)) as proxy, aiohttp.ClientSession() as session:
        via_proxy = settings.amqp_url.replace(amqp, f"127.0.0.1:{proxy.port}")
        first, first_port = await spawn(settings, "api", amqp_url=via_proxy, publish_timeout=60)
        proxy.hold()  # the commit happens; the publish after it never gets its confirm
        idem = uuid.uuid4().hex
        api = Api(session, key)
        api.session = aiohttp.ClientSession(base_url=f"http://127.0.0.1:{first_port}")
        hanging = asyncio.create_task(post_raw(api, idem))
        try:
            for _ in range(200):
                if await ctx.db.fetchval("SELECT count(*) FROM payments"):
                    break
                await asyncio.sleep(0.05)
            assert await ctx.db.fetchval("SELECT count(*) FROM idempotency_keys") == 1
            assert not hanging.done()
            first.kill()  # between the commit and the reply
            assert await first.wait() == -9
            with pytest.raises(aiohttp.ClientError):
                await hanging
        finally:
            await api.session.close()
        second, second_port = await spawn(settings, "api")
        try:
            api.session = aiohttp.ClientSession(base_url=f"http://127.0.0.1:{second_port}")
            status, body, headers = await post_raw(api, idem)
            await api.session.close()
        finally:
            second.terminate()
            await second.wait()
    assert status == 201 and headers["Idempotent-Replayed"] == "true"
    rows = await ctx.db.fetch("SELECT id FROM payments")
    assert [r["id"] for r in rows] == [body["id"]]
    # The event committed with the payment reaches the endpoint through the outbox sweep.
    await receiver.wait_for(lambda r: created_ids(receiver) == {body["id"]}, timeout=20)


async def test_fifty_concurrent_transitions_apply_once(api: Api, ctx: Context) -> None:
    [payment_id] = await create_payments(api, 1)
    results = await asyncio.gather(
        *(api.call("POST", f"/v1/payments/{payment_id}/cancel") for _ in range(50))
    )
    assert {status for status, _ in results} == {200}
    assert {body["status"] for _, body in results} == {"canceled"}
    canceled = await ctx.db.fetchval(
        "SELECT count(*) FROM events "
        "WHERE type = 'payment.canceled' AND convert_from(body, 'UTF8') LIKE $1",
        f"%{payment_id}%",
    )
    assert canceled == 1

    [other] = await create_payments(api, 1)
    moved = await asyncio.gather(*(flow.move(ctx, other, "authorized") for _ in range(50)))
    assert sum(1 for m in moved if m is not None and m.event is not None) == 1


async def test_database_dump_holds_no_secret(settings: Settings, api: Api) -> None:
    endpoint = await api.endpoint("https://hooks.example/x", ["payment.created"])
    await create_payments(api, 1)
    dump = await asyncio.to_thread(
        subprocess.run,
        ["pg_dump", "--data-only", settings.database_url],
        capture_output=True,
        check=True,
        timeout=60,
    )
    text: Any = dump.stdout
    assert b"hooks.example" in text  # the dump does hold the data
    assert endpoint["secret"].encode() not in text
    assert api.key.encode() not in text
