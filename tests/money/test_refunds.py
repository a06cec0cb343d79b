"""Refunds through the API: amounts, states, events, idempotency and the rules' Problems."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from harness.receivers import Receiver
from tests.conftest import Api
from tests.money.flows import balance, create, key, paid, refund, transactions


async def test_full_refund_by_default_debits_the_balance_and_emits_refund_succeeded(
    api: Api, receiver: Receiver
) -> None:
    await api.endpoint(receiver.url("/hook"), ["refund.succeeded", "refund.failed"])
    payment = await paid(api, 2450)
    assert payment["fee"] == 101  # online: 2.9 % of 2450 = 71.05 → 71, plus 30
    assert await balance(api) == (2450 - 101, 0)

    status, created = await refund(api, payment["id"])
    assert status == 201, created
    assert created["id"].startswith("re_")
    assert (created["status"], created["amount"]) == ("pending", 2450)
    assert created["payment_id"] == payment["id"]

    status, settled = await api.call("GET", f"/v1/refunds/{created['id']}")
    assert status == 200
    assert settled["status"] == "succeeded" and settled["failure_code"] is None
    assert settled["balance_transaction_id"].startswith("txn_")
    assert await balance(api) == (0, 0)  # a full refund gives the whole fee back

    [hook] = await receiver.wait_for(lambda r: len(r) >= 1)
    event = orjson.loads(hook.body)
    assert event["type"] == "refund.succeeded"
    assert event["data"]["id"] == created["id"]
    assert event["data"]["payment_id"] == payment["id"]
    assert (event["data"]["status"], event["data"]["amount"]) == ("succeeded", 2450)
    moves = await transactions(api, f"&source_id={created['id']}")
    assert sorted((t["type"], t["amount"]) for t in moves) == [
        ("fee_refund", 101),
        ("refund", -2450),
    ]


async def test_partial_refunds_give_back_the_fee_in_proportion(api: Api) -> None:
    payment = await paid(api, 1000)  # fee 29 + 30 = 59
    for amount in (333, 333, 334):
        status, created = await refund(api, payment["id"], amount)
        assert status == 201, created
    moves = await transactions(api, "")
    # floor(59 × 333 / 1000) = 19, then floor(59 × 666 / 1000) − 19 = 20, then 59 − 39 = 20.
    assert _only(moves, "fee_refund") == [20, 20, 19]
    assert _only(moves, "refund") == [-334, -333, -333]
    assert await balance(api) == (0, 0)


async def test_partial_refunds_add_up_to_the_captured_amount_at_most(api: Api) -> None:
    payment = await paid(api, 3000)
    assert (await refund(api, payment["id"], 1000))[0] == 201
    assert (await refund(api, payment["id"], 1500))[0] == 201
    status, problem = await refund(api, payment["id"], 501)
    assert status == 422, problem
    assert problem["code"] == "validation_error"
    assert [(e["field"], e["code"]) for e in problem["errors"]] == [
        ("amount", "exceeds_refundable")
    ]
    assert "500" in problem["errors"][0]["detail"]
    status, rest = await refund(api, payment["id"])  # the default: what is left
    assert status == 201 and rest["amount"] == 500
    status, problem = await refund(api, payment["id"])
    assert status == 422 and problem["errors"][0]["field"] == "amount"

    status, listed = await api.call("GET", f"/v1/payments/{payment['id']}/refunds?limit=2")
    assert status == 200 and listed["has_more"] is True
    status, rest_page = await api.call(
        "GET", f"/v1/payments/{payment['id']}/refunds?cursor={listed['next_cursor']}"
    )
    amounts = [r["amount"] for r in listed["data"] + rest_page["data"]]
    assert amounts == [500, 1500, 1000] and rest_page["has_more"] is False


async def test_sandbox_amount_ending_in_05_fails_declined(api: Api, receiver: Receiver) -> None:
    await api.endpoint(receiver.url("/hook"), ["refund.failed"])
    payment = await paid(api, 2450)
    before = await balance(api)
    status, created = await refund(api, payment["id"], 1205)
    assert status == 201
    _, settled = await api.call("GET", f"/v1/refunds/{created['id']}")
    assert (settled["status"], settled["failure_code"]) == ("failed", "declined")
    assert settled["balance_transaction_id"] is None
    assert await balance(api) == before
    [hook] = await receiver.wait_for(lambda r: len(r) >= 1)
    data = orjson.loads(hook.body)["data"]
    assert (data["status"], data["failure_code"], data["amount"]) == ("failed", "declined", 1205)
    # A failed refund gives its amount back to what can be refunded.
    status, again = await refund(api, payment["id"])
    assert status == 201 and again["amount"] == 2450


async def test_a_refund_the_balance_cannot_cover_fails_with_insufficient_funds(api: Api) -> None:
    payment = await paid(api, 1000)
    status, payout = await api.call("POST", "/v1/payouts", headers=key())
    assert status == 201 and payout["amount"] == 1000 - 59
    _, created = await refund(api, payment["id"], 500)
    _, settled = await api.call("GET", f"/v1/refunds/{created['id']}")
    assert (settled["status"], settled["failure_code"]) == ("failed", "insufficient_funds")
    assert await balance(api) == (0, 0)


@pytest.mark.parametrize("action", ["decline", "cancel", None])
async def test_only_succeeded_payments_are_refunded(api: Api, action: str | None) -> None:
    from tests.money.flows import checkout

    payment = await create(api)
    if action is not None:
        payment = await checkout(api, payment, action)
    status, problem = await refund(api, payment["id"])
    assert status == 409, problem
    assert problem["code"] == "payment_not_succeeded"
    assert payment["status"] in problem["detail"]


BAD_INPUT = [
    ({"amount": "12.50"}, "not_integer"),
    ({"amount": "0"}, "out_of_range"),
    ({"amount": "-5"}, "out_of_range"),
    ({"amount": "lots"}, "invalid_integer"),
    ({"colour": "red"}, "unknown_field"),
]


async def test_bad_input_names_the_field(api: Api) -> None:
    payment = await paid(api)
    path = f"/v1/payments/{payment['id']}/refunds"
    for form, code in BAD_INPUT:
        status, problem = await api.call("POST", path, data=form, headers=key())
        assert status == 422, problem
        assert [e["code"] for e in problem["errors"]] == [code], form
    form_twice = [("amount", "100"), ("amount", "200")]
    status, problem = await api.call("POST", path, data=form_twice, headers=key())
    assert status == 422 and problem["errors"][0]["code"] == "duplicate_field"


async def test_idempotency_key_is_required_and_replays(api: Api) -> None:
    payment = await paid(api)
    path = f"/v1/payments/{payment['id']}/refunds"
    status, problem = await api.call("POST", path, data={"amount": "100"})
    assert status == 400 and problem["code"] == "idempotency_key_missing"
    assert problem["errors"][0]["field"] == "Idempotency-Key"
    headers = key()
    first = await api.call("POST", path, data={"amount": "100"}, headers=headers)
    again = await api.call("POST", path, data={"amount": "100"}, headers=headers)
    assert first == again and first[0] == 201
    _, listed = await api.call("GET", f"{path}")
    assert len(listed["data"]) == 1
    status, problem = await api.call("POST", path, data={"amount": "200"}, headers=headers)
    assert status == 422 and problem["code"] == "idempotency_key_reused"


async def test_unknown_ids_are_404(api: Api) -> None:
    missing = "0" * 26
    status, problem = await refund(api, f"pay_{missing}")
    assert (status, problem["code"]) == (404, "payment_not_found")
    status, body = await api.call("GET", f"/v1/refunds/re_{missing}")
    assert (status, body["code"]) == (404, "refund_not_found")
    status, body = await api.call("GET", "/v1/refunds/not-an-id")
    assert (status, body["code"]) == (404, "refund_not_found")


def _only(items: list[dict[str, Any]], kind: str) -> list[int]:
    return [t["amount"] for t in items if t["type"] == kind]


async def test_concurrent_refunds_never_exceed_the_captured_amount(api: Api) -> None:
    payment = await paid(api, 2450)
    results = await asyncio.gather(*(refund(api, payment["id"], 500) for _ in range(8)))
    assert sorted(status for status, _ in results) == [201] * 4 + [422] * 4
    _, listed = await api.call("GET", f"/v1/payments/{payment['id']}/refunds")
    assert sum(r["amount"] for r in listed["data"] if r["status"] == "succeeded") == 2000
