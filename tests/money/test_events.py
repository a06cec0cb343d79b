"""Each of the eleven event types, caused through the API and delivered signed, with bodies
and headers as the OpenAPI document's webhooks describe them."""

from __future__ import annotations

import aiohttp
import orjson

from harness.receivers import Receiver
from svc.context import Context
from svc.envelope import OPERATIONAL
from svc.signing import verify
from tests.conftest import Api, Running
from tests.event_schemas import delivery_errors
from tests.money.flows import ALL_EVENTS, checkout, create, key, paid, refund

DEVICE = "/terminal/v1/connect"


async def test_every_event_type_can_be_caused_through_the_api(
    api: Api, ctx: Context, service: Running, receiver: Receiver
) -> None:
    endpoint = await api.endpoint(receiver.url("/hook"), ALL_EVENTS)
    canceled = await create(api)  # payment.created
    assert (await api.call("POST", f"/v1/payments/{canceled['id']}/cancel"))[0] == 200
    await checkout(api, await create(api), "decline")  # payment.failed
    payment = await paid(api, 5000)  # payment.authorized, payment.succeeded
    assert (await refund(api, payment["id"], 1000))[0] == 201  # refund.succeeded
    assert (await refund(api, payment["id"], 1005))[0] == 201  # refund.failed (sandbox)
    path = f"/v1/sandbox/payments/{payment['id']}/chargeback"
    assert (await api.call("POST", path, headers=key()))[0] == 201  # chargeback.created
    await paid(api, 9000)
    assert (await api.call("POST", "/v1/payouts", headers=key()))[0] == 201  # payout.paid

    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    terminal, secret = await ctx.terminals.register(scope, "Till 1")
    async with aiohttp.ClientSession(base_url=service.base_url) as session:
        headers = {"Authorization": f"Bearer {secret}"}
        async with session.ws_connect(DEVICE, headers=headers) as ws:  # terminal.online
            await ws.receive(timeout=5)
            await receiver.wait_for(lambda r: "terminal.online" in _types(r))
    # terminal.offline once the device hung up.
    other = await api.endpoint(receiver.url("/other"), ["payment.succeeded"])
    for disabled in (True, False):  # webhook_endpoint.disabled, then .enabled
        change = {"disabled": disabled}
        path = f"/v1/webhook_endpoints/{other['id']}"
        assert (await api.call("PATCH", path, json=change))[0] == 200
    # webhook_endpoint.failing and delivery.exhausted take time and a ladder run out: their
    # own test (tests/integration/test_operational_events.py) causes them.
    expected = set(ALL_EVENTS) - {"webhook_endpoint.failing", "delivery.exhausted"}

    received = await receiver.wait_for(lambda r: set(_types(r)) >= expected)
    received = [r for r in received if r.path == "/hook"]
    for request in received:
        verify(request.headers["Svc-Signature"], request.body, str(endpoint["secret"]))
        assert delivery_errors(request) == []
    by_type = {e["type"]: e["data"] for e in (orjson.loads(r.body) for r in received)}
    assert by_type["terminal.offline"]["id"] == terminal.id
    for money in ("refund.succeeded", "refund.failed", "chargeback.created"):
        assert by_type[money]["payment_id"] == payment["id"]
    for kind in ("webhook_endpoint.disabled", "webhook_endpoint.enabled"):
        assert by_type[kind]["endpoint_id"] == other["id"]
    for kind, data in by_type.items():
        if kind not in OPERATIONAL:
            assert {"id", "status"} <= set(data)


async def test_a_test_send_in_standard_webhooks_mode_is_as_described(
    api: Api, receiver: Receiver
) -> None:
    status, endpoint = await api.call(
        "POST",
        "/v1/webhook_endpoints",
        json={
            "url": receiver.url("/standard"),
            "events": ["payment.succeeded"],
            "signature_scheme": "standard-webhooks",
        },
    )
    assert status == 201 and isinstance(endpoint, dict), endpoint
    assert (await api.call("POST", f"/v1/webhook_endpoints/{endpoint['id']}/test"))[0] == 202
    (request,) = await receiver.wait_for(lambda r: len(r) == 1)
    assert "webhook-signature" in {name.lower() for name in request.headers}
    assert delivery_errors(request) == []


def _types(received: list[object]) -> list[str]:
    return [orjson.loads(r.body)["type"] for r in received]  # type: ignore[attr-defined]
