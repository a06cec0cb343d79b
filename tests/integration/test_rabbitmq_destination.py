"""RabbitMQ destinations against a private RabbitMQ node: the exact body is published to the
endpoint's exchange, persistent, with the signature headers a consumer verifies; the password
is kept sealed and shown masked; a broker that refuses (no exchange, no queue, bad
credentials) is a failure on the ladder, and one that is down is retried until it is back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aio_pika
import pytest
from standardwebhooks import Webhook

from harness.servers.rabbitmq import PrivateRabbitMQ, private_rabbitmq
from svc.context import Context
from svc.events.flow import emit
from svc.signing import verify
from tests.conftest import Api

PAID = "payment.succeeded"
PASSWORD = "s3cret/with:odd@chars"


@pytest.fixture
async def node() -> AsyncIterator[PrivateRabbitMQ]:
    async with private_rabbitmq() as broker:
        await broker.ctl("add_user", "shop", PASSWORD)
        await broker.ctl("set_permissions", "-p", "/", "shop", ".*", ".*", ".*")
        yield broker


async def _bound_queue(
    node: PrivateRabbitMQ, exchange: str, binding: str = "#"
) -> tuple[aio_pika.abc.AbstractConnection, aio_pika.abc.AbstractQueue]:
    """A queue bound to ``exchange`` (a topic exchange, declared here), as a receiver's."""
    connection = await aio_pika.connect(node.url)
    channel = await connection.channel()
    declared = await channel.declare_exchange(exchange, aio_pika.ExchangeType.TOPIC)
    queue = await channel.declare_queue(exclusive=True)
    await queue.bind(declared, binding)
    return connection, queue


async def _next(queue: aio_pika.abc.AbstractQueue, within: float = 20) -> Any:
    for _ in range(int(within * 10)):
        message = await queue.get(fail=False, no_ack=True)
        if message is not None:
            return message
        await asyncio.sleep(0.1)
    raise AssertionError("nothing was published")


async def _log(api: Api, endpoint_id: str, count: int = 1, within: float = 30) -> list[Any]:
    for _ in range(int(within * 10)):
        _, page = await api.call("GET", f"/v1/webhook_endpoints/{endpoint_id}/deliveries")
        if len(page["data"]) >= count:
            return list(page["data"])
        await asyncio.sleep(0.1)
    raise AssertionError(f"fewer than {count} attempts were logged")


async def _emit(api: Api, ctx: Context, payment: str) -> str:
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    event = await emit(ctx, scope.org, scope.env, PAID, {"id": payment, "amount": 100})
    return str(event.id)


def _url(node: PrivateRabbitMQ, query: str, password: str = PASSWORD) -> str:
    secret = password.replace("/", "%2F").replace(":", "%3A").replace("@", "%40")
    return f"amqp://shop:{secret}@127.0.0.1:{node.port}/?{query}"


@pytest.mark.servers
@pytest.mark.timeout(120)
async def test_events_are_published_signed_and_refusals_are_failures(
    api: Api, ctx: Context, node: PrivateRabbitMQ
) -> None:
    connection, queue = await _bound_queue(node, "payments")
    try:
        status, endpoint = await api.call(
            "POST",
            "/v1/webhook_endpoints",
            json={
                "url": _url(node, "exchange=payments&routing_key=shop.paid"),
                "events": [PAID],
                "headers": {"X-Tenant": "bakery"},
            },
        )
        assert status == 201, endpoint
        masked = f"amqp://shop:****@127.0.0.1:{node.port}/?exchange=payments&routing_key=shop.paid"
        assert endpoint["url"] == masked
        row = await ctx.db.fetchrow(
            "SELECT url, url_password FROM webhook_endpoints WHERE id = $1", endpoint["id"]
        )
        assert "s3cret" not in row["url"] and b"s3cret" not in bytes(row["url_password"])

        event_id = await _emit(api, ctx, "pay_1")
        message = await _next(queue)
        stored = await ctx.db.fetchval("SELECT body FROM events WHERE id = $1", event_id)
        assert message.body == bytes(stored)
        assert message.routing_key == "shop.paid"
        assert message.delivery_mode == aio_pika.DeliveryMode.PERSISTENT
        assert message.message_id == event_id and message.content_type == "application/json"
        headers = message.headers
        assert headers["Svc-Event-Id"] == event_id and headers["X-Tenant"] == "bakery"
        verify(str(headers["Svc-Signature"]), message.body, endpoint["secret"])
        log = await _log(api, endpoint["id"])
        assert log[0]["outcome"] == "success" and log[0]["status_code"] is None, log

        # Standard Webhooks: the same headers a consumer verifies with the library.
        status, changed = await api.call(
            "PATCH",
            f"/v1/webhook_endpoints/{endpoint['id']}",
            json={"signature_scheme": "standard-webhooks", "url": masked},
        )
        assert status == 200, changed
        await asyncio.sleep(0.5)  # the dispatchers' cache takes the change notice
        event_id = await _emit(api, ctx, "pay_2")
        message = await _next(queue)
        headers = {name: str(value) for name, value in message.headers.items()}
        Webhook(endpoint["secret"]).verify(message.body, headers)
        assert headers["webhook-id"] == event_id

        # No queue takes the routing key: returned, so refused.
        other, _ = await _bound_queue(node, "sparse", "only.this")
        await other.close()
        refused = [
            ("exchange=sparse", "no queue took the message"),
            ("exchange=missing", "no exchange 'missing'"),
        ]
        for query, words in refused:
            status, created = await api.call(
                "POST", "/v1/webhook_endpoints", json={"url": _url(node, query), "events": [PAID]}
            )
            assert status == 201, created
            await _emit(api, ctx, "pay_3")
            log = await _log(api, created["id"])
            assert log[0]["outcome"] == "broker_refused" and words in log[0]["error"], log
        status, created = await api.call(
            "POST",
            "/v1/webhook_endpoints",
            json={"url": _url(node, "exchange=payments", "wrong"), "events": [PAID]},
        )
        await _emit(api, ctx, "pay_4")
        log = await _log(api, created["id"])
        assert log[0]["outcome"] == "broker_refused" and "credentials" in log[0]["error"], log
        assert log[0]["next_attempt_at"] is not None  # on the ladder, like a 5xx
    finally:
        await connection.close()


@pytest.mark.servers
@pytest.mark.timeout(150)
async def test_a_broker_that_is_down_is_retried_until_it_is_back(
    api: Api, ctx: Context, node: PrivateRabbitMQ
) -> None:
    connection = await aio_pika.connect(node.url)
    try:
        channel = await connection.channel()
        topic = aio_pika.ExchangeType.TOPIC
        exchange = await channel.declare_exchange("payments", topic, durable=True)
        queue = await channel.declare_queue("kept", durable=True)
        await queue.bind(exchange, "#")
        await connection.close()
        endpoint = await api.endpoint(_url(node, "exchange=payments"), [PAID])

        await node.stop_app()
        event_id = await _emit(api, ctx, "pay_down")
        log = await _log(api, str(endpoint["id"]))
        assert log[0]["outcome"] == "connect" and log[0]["next_attempt_at"], log

        await node.start_app()
        connection = await aio_pika.connect(node.url)
        channel = await connection.channel()
        queue = await channel.declare_queue("kept", durable=True)
        message = await _next(queue, within=40)
        assert message.message_id == event_id and message.routing_key == PAID
        for _ in range(200):  # the success is recorded just after the broker's confirm
            attempts = await _log(api, str(endpoint["id"]), 2)
            if attempts[0]["outcome"] == "success":
                break
            await asyncio.sleep(0.1)
        assert attempts[0]["outcome"] == "success", attempts
        assert {a["outcome"] for a in attempts[1:]} == {"connect"}, attempts
    finally:
        await connection.close()


async def test_broker_urls_are_checked_and_the_password_kept_only_for_its_broker(
    api: Api, ctx: Context
) -> None:
    cases = [
        ("amqp://b.example/", "invalid_url"),
        ("amqp://b.example/?exchange=", "invalid_url"),
        ("amqp://b.example/?exchange=x&cafile=/etc/passwd", "invalid_url"),
        ("amqps://b.example/?exchange=x&no_verify_ssl=1", "invalid_url"),
        ("amqp://b.example/?exchange=x&exchange=y", "invalid_url"),
        ("amqp://b.example/a/b?exchange=x", "invalid_url"),
        ("amqp://b.example:0/?exchange=x", "invalid_url"),
        ("amqp://b.example:99999/?exchange=x", "invalid_url"),
        ("amqp://b.example/?exchange=" + "x" * 256, "invalid_url"),
        ("amqp://b.example/?exchange=x#part", "invalid_url"),
        ("amqp://b example/?exchange=x", "invalid_url"),
        ("amqp:///?exchange=x", "invalid_url"),
        ("ftp://b.example/", "unsupported_scheme"),
    ]
    for url, code in cases:
        status, problem = await api.call(
            "POST", "/v1/webhook_endpoints", json={"url": url, "events": [PAID]}
        )
        assert status == 422, (url, problem)
        assert [(e["field"], e["code"]) for e in problem["errors"]] == [("url", code)], problem

    url = "amqps://shop:hunter2-secret@b.example/sales?exchange=payments"
    endpoint = await api.endpoint(url, [PAID])
    assert endpoint["url"] == "amqps://shop:****@b.example/sales?exchange=payments"
    _, listed = await api.call("GET", "/v1/webhook_endpoints")
    assert "hunter2" not in str(listed)
    path = f"/v1/webhook_endpoints/{endpoint['id']}"
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None

    async def password() -> str | None:
        found = await ctx.endpoints.get(scope, str(endpoint["id"]))
        assert found is not None
        return found.url_password

    kept = "amqps://shop:****@b.example/sales?exchange=refunds&routing_key=r"
    status, changed = await api.call("PATCH", path, json={"url": kept})
    assert status == 200 and changed["url"] == kept, changed
    assert await password() == "hunter2-secret"
    for elsewhere in (
        "amqps://shop:****@evil.example/sales?exchange=payments",
        "amqps://shop:****@b.example:1234/sales?exchange=payments",
        "amqps://admin:****@b.example/sales?exchange=payments",
        "amqp://shop:****@b.example/sales?exchange=payments",
    ):
        status, problem = await api.call("PATCH", path, json={"url": elsewhere})
        assert status == 422, (elsewhere, problem)
        assert [(e["field"], e["code"]) for e in problem["errors"]] == [
            ("url", "password_required")
        ], problem
    assert await password() == "hunter2-secret"
    status, changed = await api.call("PATCH", path, json={"url": "https://hooks.example/in"})
    assert status == 200 and await password() is None
