"""Events of foreign producers: accepted with their own ids, or kept in the rejected queue with
their reason, counted; never dropped silently."""

from __future__ import annotations

import asyncio
import re
import uuid
from dataclasses import dataclass, field

import aio_pika
import orjson
from aio_pika.abc import AbstractIncomingMessage

from dispatcher.intake import REASONS
from harness.receivers import Receiver
from svc.context import Context
from svc.signing import verify
from tests.conftest import Api

NO_ORG = "org_" + "0" * 26  # the shape of an id, but of no organisation


@dataclass
class Foreign:
    """A message as a foreign producer publishes it on the events exchange."""

    name: str
    routing_key: str = "payment.succeeded"
    headers: dict[str, object] = field(default_factory=dict)
    body: bytes = b""

    async def publish(self, ctx: Context) -> None:
        message = aio_pika.Message(
            self.body,
            headers=self.headers,  # type: ignore[arg-type]
            message_id=self.name,
            content_type="application/json",
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
        )
        await ctx.exchange.publish(message, routing_key=self.routing_key)


def envelope(event_id: object, event_type: str = "payment.succeeded") -> bytes:
    data = {"id": "pay_f", "status": "succeeded", "amount": 1200}
    return orjson.dumps({"id": event_id, "type": event_type, "environment": "test", "data": data})


async def org_of(ctx: Context, api: Api) -> str:
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    return scope.org


async def rejected(ctx: Context, count: int, timeout: float = 10) -> list[AbstractIncomingMessage]:
    """The first ``count`` messages of the rejected queue (taken off it)."""
    queue = await ctx.channel.get_queue(ctx.topology.rejected)
    found: list[AbstractIncomingMessage] = []
    async with asyncio.timeout(timeout):
        while len(found) < count:
            message = await queue.get(no_ack=True, fail=False)
            if message is None:
                await asyncio.sleep(0.05)
            else:
                found.append(message)
    return found


def text(value: object) -> object:
    return value.decode() if isinstance(value, bytes) else value


async def rejected_counts(api: Api, expected: dict[str, float]) -> dict[str, float]:
    """``svc_events_rejected_total`` by reason, once it shows ``expected`` (it is counted
    just after the broker confirms the move, so a test may see the message first)."""
    pattern = r'^svc_events_rejected_total\{reason="(\w+)"\} (\S+)$'
    for _ in range(20):
        async with api.session.get(api.ops_url + "/metrics") as response:
            metrics = await response.text()
        counts = {m[1]: float(m[2]) for m in re.finditer(pattern, metrics, re.MULTILINE)}
        if counts == expected:
            break
        await asyncio.sleep(0.1)
    return counts


async def test_every_unacceptable_message_is_kept_with_its_reason_and_counted(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    org = await org_of(ctx, api)
    await api.endpoint(receiver.url("/hook"), ["payment.succeeded"])
    scope = {"svc-org": org, "svc-env": "test"}
    cases = {
        "missing_header": [
            Foreign("no org", headers={"svc-env": "test"}, body=envelope("o-1")),
            Foreign("empty env", headers={"svc-org": org, "svc-env": ""}, body=envelope("o-2")),
        ],
        "unknown_type": [
            Foreign("other type", "order.shipped", scope, envelope("o-3", "order.shipped"))
        ],
        "unknown_environment": [
            Foreign("staging", headers={"svc-org": org, "svc-env": "staging"}, body=envelope("o-4"))
        ],
        "not_an_envelope": [
            Foreign("not json", headers=scope, body=b"<order id='o-5'/>"),
            Foreign("a list", headers=scope, body=b'[{"id": "o-6"}]'),
            Foreign("number id", headers=scope, body=envelope(7)),
            Foreign("no id", headers=scope, body=b'{"type": "payment.succeeded"}'),
        ],
        "invalid_event_id": [
            Foreign("slash", headers=scope, body=envelope("orders/8")),
            Foreign("too long", headers=scope, body=envelope("o" * 256)),
        ],
        "invalid_header": [
            Foreign(
                "bad time", headers={**scope, "svc-created-ms": "yesterday"}, body=envelope("o-9")
            )
        ],
        "unknown_organisation": [
            Foreign(
                "no such org", headers={"svc-org": NO_ORG, "svc-env": "test"}, body=envelope("o-10")
            )
        ],
    }
    reason_of = {case.name: reason for reason, group in cases.items() for case in group}
    sent = {case.name: case for group in cases.values() for case in group}
    for case in sent.values():
        await case.publish(ctx)

    kept = {message.message_id: message for message in await rejected(ctx, len(sent))}
    assert set(kept) == set(sent)
    for name, message in kept.items():
        case = sent[str(name)]
        headers = message.headers
        assert text(headers["svc-rejected-reason"]) == reason_of[case.name], case.name
        assert text(headers["svc-rejected-detail"]), case.name
        assert text(headers["svc-routing-key"]) == case.routing_key
        assert message.body == case.body
        assert {k: text(headers[k]) for k in case.headers} == case.headers
        assert message.delivery_mode == aio_pika.DeliveryMode.PERSISTENT

    expected = {reason: float(len(cases.get(reason, []))) for reason in REASONS}
    assert await rejected_counts(api, expected) == expected
    await asyncio.sleep(0.5)
    assert receiver.received == []
    for event_id in ("o-1", "o-4", "o-9", "o-10"):
        status, _ = await api.call("GET", f"/v1/events/{event_id}")
        assert status == 404, event_id


async def test_an_organisation_name_instead_of_its_id_is_rejected_not_lost(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    await api.endpoint(receiver.url("/hook"), ["payment.succeeded"])
    by_name = Foreign(
        "by name", headers={"svc-org": "acme", "svc-env": "test"}, body=envelope("o-1")
    )
    await by_name.publish(ctx)

    [message] = await rejected(ctx, 1)
    assert text(message.headers["svc-rejected-reason"]) == "unknown_organisation"
    assert "'acme'" in str(text(message.headers["svc-rejected-detail"]))
    assert text(message.headers["svc-org"]) == "acme"
    assert message.body == by_name.body
    expected = {**dict.fromkeys(REASONS, 0.0), "unknown_organisation": 1.0}
    assert await rejected_counts(api, expected) == expected
    await asyncio.sleep(0.5)
    assert receiver.received == []
    status, body = await api.call("GET", "/v1/events/o-1")
    assert status == 404 and isinstance(body, dict) and body["code"] == "event_not_found"


async def test_a_foreign_event_with_its_own_id_is_stored_delivered_and_readable(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    org = await org_of(ctx, api)
    endpoint = await api.endpoint(receiver.url("/hook"), ["payment.succeeded"])
    ids = ["order-123", str(uuid.uuid4())]
    for event_id in ids:
        await Foreign(
            event_id, headers={"svc-org": org, "svc-env": "test"}, body=envelope(event_id)
        ).publish(ctx)

    received = await receiver.wait_for(lambda r: len(r) >= 2)
    assert sorted(r.headers["Svc-Event-Id"] for r in received) == sorted(ids)
    for request in received:
        assert request.body == envelope(request.headers["Svc-Event-Id"])
        verify(request.headers["Svc-Signature"], request.body, str(endpoint["secret"]))

    for event_id in ids:
        event = await wait_delivered(api, event_id)
        assert event["id"] == event_id and event["type"] == "payment.succeeded"
        assert event["deliveries"][0]["endpoint_id"] == endpoint["id"]
        status, log = await api.call("GET", f"/v1/events/{event_id}/deliveries")
        assert status == 200 and isinstance(log, dict)
        assert [(d["event_id"], d["outcome"]) for d in log["data"]] == [(event_id, "success")]

    status, body = await api.call("POST", "/v1/events/order-123/resend")
    assert status == 202 and body == {"event_id": "order-123", "status": "scheduled"}
    again = await receiver.wait_for(lambda r: len(r) >= 3)
    assert again[2].body == envelope("order-123")
    for unknown in ("order-124", "evt_00000000000000000000000000"):
        status, body = await api.call("GET", f"/v1/events/{unknown}")
        assert status == 404 and isinstance(body, dict) and body["code"] == "event_not_found"
    nothing = dict.fromkeys(REASONS, 0.0)
    assert await rejected_counts(api, nothing) == nothing


async def wait_delivered(api: Api, event_id: str) -> dict[str, object]:
    """The event once the API shows a successful delivery (the log is written in batches)."""
    for _ in range(100):
        status, body = await api.call("GET", f"/v1/events/{event_id}")
        assert status in (200, 404), body
        if status == 200 and isinstance(body, dict) and body["deliveries"]:
            assert body["deliveries"][0]["state"] == "succeeded"
            return body
        await asyncio.sleep(0.1)
    raise AssertionError(f"event {event_id} never showed its delivery")
