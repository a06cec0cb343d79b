"""Chargebacks through the sandbox route: debits, fee, events, and the rules' Problems."""

from __future__ import annotations

from typing import Any

import orjson

from harness.receivers import Receiver
from svc.context import Context
from tests.conftest import Api
from tests.money.flows import balance, create, key, paid, paid_live, refund, transactions


async def chargeback(api: Api, payment_id: str, **form: str) -> tuple[int, dict[str, Any]]:
    path = f"/v1/sandbox/payments/{payment_id}/chargeback"
    status, body = await api.call("POST", path, data=form or None, headers=key())
    assert isinstance(body, dict)
    return status, body


async def test_a_chargeback_debits_what_is_left_plus_its_fee(api: Api, receiver: Receiver) -> None:
    await api.endpoint(receiver.url("/hook"), ["chargeback.created"])
    payment = await paid(api, 5000)  # fee 145 + 30 = 175
    assert (await refund(api, payment["id"], 1000))[0] == 201  # gives back 35 of the fee
    assert await balance(api) == (5000 - 175 - 1000 + 35, 0)

    status, created = await chargeback(api, payment["id"], reason="product_not_received")
    assert status == 201, created
    assert created["id"].startswith("cb_")
    assert (created["amount"], created["fee"], created["status"]) == (4000, 1500, "debited")
    assert created["reason"] == "product_not_received"
    # Imposed, so it may overdraw: 3860 − 4000 − 1500.
    assert await balance(api) == (3860 - 4000 - 1500, 0)
    moves = await transactions(api, f"&source_id={created['id']}")
    assert sorted((t["type"], t["amount"]) for t in moves) == [
        ("chargeback", -4000),
        ("chargeback_fee", -1500),
    ]
    [hook] = await receiver.wait_for(lambda r: len(r) >= 1)
    event = orjson.loads(hook.body)
    assert event["type"] == "chargeback.created"
    data = event["data"]
    assert (data["id"], data["payment_id"]) == (created["id"], payment["id"])
    assert (data["status"], data["amount"], data["fee"]) == ("debited", 4000, 1500)

    assert await api.call("GET", f"/v1/chargebacks/{created['id']}") == (200, created)
    status, listed = await api.call("GET", "/v1/chargebacks")
    assert status == 200 and listed["data"] == [created]

    # Nothing is left to refund, and a second chargeback is refused.
    status, problem = await refund(api, payment["id"])
    assert (status, problem["errors"][0]["code"]) == (422, "exceeds_refundable")
    status, problem = await chargeback(api, payment["id"])
    assert (status, problem["code"]) == (409, "already_charged_back")


async def test_refused_chargebacks(api: Api, make_api: Any, ctx: Context) -> None:
    pending = await create(api)
    status, problem = await chargeback(api, pending["id"])
    assert (status, problem["code"]) == (409, "payment_not_succeeded")

    refunded = await paid(api, 1000)
    assert (await refund(api, refunded["id"]))[0] == 201
    status, problem = await chargeback(api, refunded["id"])
    assert (status, problem["code"]) == (409, "payment_fully_refunded")

    status, problem = await chargeback(api, (await paid(api))["id"], reason="bored")
    assert status == 422 and problem["errors"][0]["field"] == "reason"

    status, problem = await chargeback(api, "pay_" + "0" * 26)
    assert (status, problem["code"]) == (404, "payment_not_found")

    live: Api = await make_api(env="live")
    payment = await paid_live(live, ctx)
    status, problem = await chargeback(live, payment["id"])
    assert (status, problem["code"]) == (409, "sandbox_only")
    status, body = await live.call("GET", "/v1/chargebacks")
    assert status == 200 and body["data"] == []
