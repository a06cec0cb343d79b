"""Terminals and the simulation terminal: listing, magic amounts, tips, busy, WebSocket steps."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import aiohttp
import orjson
import pytest

from harness.receivers import Receiver
from svc.settings import Settings
from tests.conftest import Api


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return replace(
        settings, terminal_step_delay=0.05, terminal_timeout=1.5, expiry_sweep_interval=0.1
    )


async def simulator(api: Api) -> dict[str, Any]:
    status, body = await api.call("GET", "/v1/terminals")
    assert status == 200, body
    simulated = [t for t in body["data"] if t["simulated"]]
    assert len(simulated) == 1
    return simulated[0]  # type: ignore[no-any-return]


async def start(
    api: Api, terminal_id: str, amount: int, tip_prompt: bool = False
) -> tuple[int, Any]:
    form = {"amount": str(amount), "currency": "CHF", "tip_prompt": str(tip_prompt).lower()}
    return await api.call(
        "POST",
        f"/v1/terminals/{terminal_id}/payments",
        data=form,
        headers={"Idempotency-Key": uuid.uuid4().hex},
    )


async def outcome(api: Api, payment_id: str) -> dict[str, Any]:
    status, body = await api.call("GET", f"/v1/payments/{payment_id}?wait=10")
    assert status == 200
    return body  # type: ignore[no-any-return]


async def test_test_organisation_has_an_online_simulation_terminal(make_api: Any) -> None:
    api: Api = await make_api(env="test")
    terminal = await simulator(api)
    assert terminal["id"].startswith("trm_")
    assert terminal["status"] == "online" and terminal["environment"] == "test"
    status, body = await api.call("GET", f"/v1/terminals/{terminal['id']}")
    assert status == 200 and body == terminal
    live: Api = await make_api(env="live")
    status, body = await live.call("GET", "/v1/terminals")
    assert status == 200 and body["data"] == []
    status, body = await live.call("GET", f"/v1/terminals/{terminal['id']}")
    assert status == 404 and body["code"] == "terminal_not_found"
    other: Api = await make_api(env="test", org="globex")
    assert (await simulator(other))["id"] != terminal["id"]
    assert (await other.call("GET", f"/v1/terminals/{terminal['id']}"))[0] == 404


async def test_approved_payment_with_tip_emits_every_state(api: Api, receiver: Receiver) -> None:
    events = ["payment.created", "payment.authorized", "payment.succeeded"]
    await api.endpoint(receiver.url("/hook"), events)
    terminal = await simulator(api)
    status, payment = await start(api, terminal["id"], 2450, tip_prompt=True)
    assert status == 201, payment
    assert payment["status"] == "pending" and payment["channel"] == "terminal"
    assert payment["terminal_id"] == terminal["id"] and payment["tip_prompt"] is True
    final = await outcome(api, payment["id"])
    assert final["status"] == "succeeded"
    assert final["tip"] == 245 and final["total_amount"] == 2695
    received = await receiver.wait_for(lambda r: len(r) >= 3)
    by_type = {orjson.loads(r.body)["type"]: orjson.loads(r.body)["data"] for r in received}
    assert set(by_type) == set(events)
    assert by_type["payment.authorized"]["tip"] == 245
    assert by_type["payment.succeeded"]["status"] == "succeeded"


@pytest.mark.parametrize(
    ("amount", "status", "reason_field", "reason"),
    [
        (1000, "succeeded", "failure_code", None),
        (1001, "failed", "failure_code", "card_declined"),
        (1002, "canceled", "cancel_reason", "customer_canceled"),
        (1003, "failed", "failure_code", "terminal_timeout"),
        (1004, "failed", "failure_code", "capture_failed"),
    ],
)
async def test_magic_amounts(
    api: Api, amount: int, status: str, reason_field: str, reason: str | None
) -> None:
    terminal = await simulator(api)
    _, payment = await start(api, terminal["id"], amount)
    final = await outcome(api, payment["id"])
    assert final["status"] == status
    assert final[reason_field] == reason
    _, after = await api.call("GET", f"/v1/terminals/{terminal['id']}")
    assert after["current_payment_id"] is None  # the terminal is free again


async def test_websocket_streams_steps_in_order_and_closes(api: Api) -> None:
    terminal = await simulator(api)
    _, payment = await start(api, terminal["id"], 2450, tip_prompt=True)
    messages = []
    async with api.session.ws_connect(
        f"/v1/payments/{payment['id']}/stream", headers=api.headers
    ) as ws:
        async for message in ws:
            messages.append(orjson.loads(message.data))
        assert ws.close_code == 1000
    steps = [m["step"] for m in messages if m["type"] == "progress"]
    assert steps == ["waiting_for_card", "tip_selection", "pin_entry", "processing"]
    assert [m["seq"] for m in messages if m["type"] == "progress"] == [1, 2, 3, 4]
    statuses = [m["payment"]["status"] for m in messages if m["type"] == "payment"]
    assert statuses[-2:] == ["authorized", "succeeded"]
    assert statuses[0] == "pending"
    kinds = [m["step"] if m["type"] == "progress" else m["payment"]["status"] for m in messages]
    assert kinds.index("processing") < kinds.index("authorized")


async def test_busy_terminal_and_cancel(api: Api) -> None:
    terminal = await simulator(api)
    _, first = await start(api, terminal["id"], 5003)  # no answer: the terminal stays busy
    status, body = await start(api, terminal["id"], 2450)
    assert status == 409 and body["code"] == "terminal_busy"
    status, canceled = await api.call("POST", f"/v1/payments/{first['id']}/cancel")
    assert status == 200 and canceled["status"] == "canceled"
    status, second = await start(api, terminal["id"], 2450)
    assert status == 201
    assert (await outcome(api, second["id"]))["status"] == "succeeded"
    status, body = await api.call("POST", f"/v1/payments/{second['id']}/cancel")
    assert status == 409 and body["code"] == "payment_not_cancelable"


async def test_unknown_terminal_and_bad_input(api: Api) -> None:
    for terminal_id in ("trm_nothing", "trm_01jd0000000000000000000000"):
        status, body = await start(api, terminal_id, 2450)
        assert status == 404 and body["code"] == "terminal_not_found"
    terminal = await simulator(api)
    status, body = await start(api, terminal["id"], 2450)
    assert status == 201
    await outcome(api, body["id"])
    form = {"amount": "24.50", "tip_prompt": "maybe"}
    status, body = await api.call(
        "POST",
        f"/v1/terminals/{terminal['id']}/payments",
        data=form,
        headers={"Idempotency-Key": uuid.uuid4().hex},
    )
    assert status == 422
    assert {e["field"] for e in body["errors"]} == {"amount", "tip_prompt"}
    status, body = await api.call(
        "POST", f"/v1/terminals/{terminal['id']}/payments", data={"amount": "100"}
    )
    assert status == 400 and body["code"] == "idempotency_key_missing"


async def test_a_field_sent_twice_is_named(api: Api) -> None:
    terminal = await simulator(api)
    form = [("amount", "100"), ("tip_prompt", "true"), ("tip_prompt", "false")]
    status, body = await api.call(
        "POST",
        f"/v1/terminals/{terminal['id']}/payments",
        data=form,
        headers={"Idempotency-Key": uuid.uuid4().hex},
    )
    assert status == 422, body
    assert [(e["field"], e["code"]) for e in body["errors"]] == [("tip_prompt", "duplicate_field")]
    _, listed = await api.call("GET", f"/v1/terminals/{terminal['id']}")
    assert listed["current_payment_id"] is None


async def test_stream_needs_websocket(api: Api) -> None:
    terminal = await simulator(api)
    _, payment = await start(api, terminal["id"], 2450)
    status, body = await api.call("GET", f"/v1/payments/{payment['id']}/stream")
    assert status == 426 and body["code"] == "websocket_required"
    with pytest.raises(aiohttp.WSServerHandshakeError):
        await api.session.ws_connect(f"/v1/payments/{payment['id']}/stream")
