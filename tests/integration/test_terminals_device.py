"""A registered (non-simulated) terminal speaking the device protocol over a real WebSocket."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest

from harness.receivers import Receiver
from svc.context import Context
from svc.terminal import flow
from tests.conftest import Api, Running

DEVICE = "/terminal/v1/connect"


@pytest.fixture
async def registered(api: Api, ctx: Context) -> tuple[str, str]:
    """A live-like terminal of the test key's scope: (terminal id, device secret)."""
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    terminal, secret = await ctx.terminals.register(scope, "Till 1")
    return terminal.id, secret


@pytest.fixture
async def device(
    service: Running, registered: tuple[str, str]
) -> AsyncIterator[aiohttp.ClientWebSocketResponse]:
    _, secret = registered
    async with aiohttp.ClientSession(base_url=service.base_url) as session:
        async with session.ws_connect(DEVICE, headers={"Authorization": f"Bearer {secret}"}) as ws:
            yield ws


async def receive(ws: aiohttp.ClientWebSocketResponse) -> dict[str, Any]:
    message = await ws.receive(timeout=5)
    assert message.type == aiohttp.WSMsgType.TEXT, message
    return orjson.loads(message.data)  # type: ignore[no-any-return]


async def send(ws: aiohttp.ClientWebSocketResponse, **message: object) -> None:
    await ws.send_str(orjson.dumps(message).decode())


async def start(api: Api, terminal_id: str, amount: int = 2450) -> tuple[int, Any]:
    return await api.call(
        "POST",
        f"/v1/terminals/{terminal_id}/payments",
        data={"amount": str(amount), "tip_prompt": "true"},
        headers={"Idempotency-Key": uuid.uuid4().hex},
    )


async def test_offline_terminal_refuses_payments(api: Api, registered: tuple[str, str]) -> None:
    terminal_id, _ = registered
    status, body = await api.call("GET", f"/v1/terminals/{terminal_id}")
    assert status == 200 and body["status"] == "offline" and body["simulated"] is False
    status, body = await start(api, terminal_id)
    assert status == 409 and body["code"] == "terminal_offline"


async def test_device_plays_a_payment_and_presence_emits_events(
    api: Api, registered: tuple[str, str], service: Running, receiver: Receiver
) -> None:
    await api.endpoint(receiver.url("/hook"), ["terminal.online", "terminal.offline"])
    terminal_id, secret = registered
    async with aiohttp.ClientSession(base_url=service.base_url) as session:
        headers = {"Authorization": f"Bearer {secret}"}
        async with session.ws_connect(DEVICE, headers=headers) as ws:
            assert await receive(ws) == {"type": "welcome", "terminal_id": terminal_id}
            assert (await api.call("GET", f"/v1/terminals/{terminal_id}"))[1]["status"] == "online"
            status, payment = await start(api, terminal_id)
            assert status == 201
            command = await receive(ws)
            assert command == {
                "type": "payment.start",
                "payment_id": payment["id"],
                "amount": 2450,
                "currency": "CHF",
                "tip_prompt": True,
            }
            await send(ws, type="progress", payment_id=payment["id"], step="pin_entry")
            await send(ws, type="authorized", payment_id=payment["id"], tip=300)
            await send(ws, type="succeeded", payment_id=payment["id"])
            _, final = await api.call("GET", f"/v1/payments/{payment['id']}?wait=5")
            assert final["status"] == "succeeded" and final["tip"] == 300
            await send(ws, type="succeeded", payment_id=payment["id"])
            refused = await receive(ws)
            assert refused["type"] == "error" and refused["code"] == "transition_refused"

    def ours(received: list[Any]) -> list[dict[str, Any]]:
        bodies = [orjson.loads(r.body) for r in received]
        return [b for b in bodies if b["data"]["id"] == terminal_id]  # not the simulator's

    events = ours(await receiver.wait_for(lambda r: len(ours(r)) >= 2))
    assert sorted(e["type"] for e in events) == ["terminal.offline", "terminal.online"]
    assert {e["data"]["status"] for e in events} == {"online", "offline"}
    assert (await api.call("GET", f"/v1/terminals/{terminal_id}"))[1]["status"] == "offline"


async def test_cancel_reaches_the_device(
    api: Api, registered: tuple[str, str], device: aiohttp.ClientWebSocketResponse
) -> None:
    terminal_id, _ = registered
    await receive(device)  # welcome
    _, payment = await start(api, terminal_id)
    await receive(device)  # payment.start
    status, _ = await api.call("POST", f"/v1/payments/{payment['id']}/cancel")
    assert status == 200
    assert await receive(device) == {"type": "payment.cancel", "payment_id": payment["id"]}


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("not json", "invalid_json"),
        ('{"type": "teleport", "payment_id": "pay_x"}', "unknown_type"),
        ('{"type": "progress", "payment_id": "pay_x", "step": "dancing"}', "invalid_field"),
        ('{"type": "authorized", "payment_id": "pay_x", "tip": -1}', "invalid_field"),
        ('{"type": "progress", "payment_id": "pay_x", "step": "pin_entry"}', "unknown_payment"),
        ('{"type": "succeeded", "payment_id": "pay_x"}', "transition_refused"),
    ],
)
async def test_protocol_errors_are_answered(
    device: aiohttp.ClientWebSocketResponse, message: str, code: str
) -> None:
    await receive(device)  # welcome
    await device.send_str(message)
    answer = await receive(device)
    assert answer["type"] == "error" and answer["code"] == code


async def test_other_terminals_payment_is_refused(
    api: Api, ctx: Context, device: aiohttp.ClientWebSocketResponse
) -> None:
    await receive(device)  # welcome
    simulated = [t for t in (await api.call("GET", "/v1/terminals"))[1]["data"] if t["simulated"]]
    _, payment = await start(api, simulated[0]["id"], 1003)  # the simulator stays silent
    await send(device, type="authorized", payment_id=payment["id"], tip=0)
    assert (await receive(device))["code"] == "transition_refused"
    assert (await ctx.payments.get(payment["id"])).status == "pending"  # type: ignore[union-attr]


async def test_bad_device_secret_is_unauthorized(service: Running) -> None:
    async with aiohttp.ClientSession(base_url=service.base_url) as session:
        for headers in ({}, {"Authorization": "Bearer trmsec_wrong"}):
            async with session.get(DEVICE, headers=headers) as response:
                assert response.status == 401
                assert (await response.json(content_type=None))["code"] == "invalid_terminal_secret"


@pytest.mark.settings(terminal_presence_ttl=2.0)  # long enough to read it online first
async def test_terminal_of_a_dead_process_goes_offline(
    api: Api, ctx: Context, registered: tuple[str, str], receiver: Receiver
) -> None:
    terminal_id, _ = registered
    await api.endpoint(receiver.url("/presence"), ["terminal.offline"])
    # A connection taken by a process that then died: its lease taken, as the device route
    # takes it, then never renewed; online until the lease runs out.
    await ctx.presence.keep_alive(terminal_id, "conn-of-a-dead-process", 2.0)
    await flow.connect(ctx, terminal_id, "conn-of-a-dead-process")
    status, body = await api.call("GET", f"/v1/terminals/{terminal_id}")
    assert status == 200 and body["status"] == "online"

    received = await receiver.wait_for(lambda r: len(r) >= 1, timeout=10)
    assert orjson.loads(received[0].body)["data"]["id"] == terminal_id
    status, body = await api.call("GET", f"/v1/terminals/{terminal_id}")
    assert body["status"] == "offline"


@pytest.mark.settings(terminal_presence_ttl=0.6)
async def test_live_connection_stays_online_past_the_ttl(
    api: Api, device: aiohttp.ClientWebSocketResponse, registered: tuple[str, str]
) -> None:
    terminal_id, _ = registered
    await receive(device)  # welcome
    await asyncio.sleep(2.0)  # several presence TTLs and sweeps
    status, body = await api.call("GET", f"/v1/terminals/{terminal_id}")
    assert status == 200 and body["status"] == "online"
