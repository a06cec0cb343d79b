"""Payouts: on request in the sandbox, on schedule by the scheduler, never twice."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from harness.receivers import Receiver
from svc.context import Context, open_context
from svc.db.times import now_ms
from svc.money.flow import payouts
from svc.money.model.schedule import DAY_MS, PayoutSchedule
from svc.orgs import Scope
from svc.settings import Settings
from tests.conftest import Api
from tests.money.flows import balance, key, paid, paid_live, transactions


async def pay_out(api: Api, **form: str) -> tuple[int, dict[str, Any]]:
    status, body = await api.call("POST", "/v1/payouts", data=form or None, headers=key())
    assert isinstance(body, dict)
    return status, body


async def test_sandbox_payout_pays_what_is_available(api: Api, receiver: Receiver) -> None:
    await api.endpoint(receiver.url("/hook"), ["payout.paid"])
    status, problem = await pay_out(api)
    assert status == 422, problem
    assert [(e["field"], e["code"]) for e in problem["errors"]] == [
        ("amount", "insufficient_funds")
    ]

    await paid(api, 2450)
    await paid(api, 1000)
    assert await balance(api) == (2349 + 941, 0)
    status, problem = await pay_out(api, amount="3291")
    assert status == 422 and problem["errors"][0]["code"] == "insufficient_funds"
    status, part = await pay_out(api, amount="290")
    assert status == 201, part
    status, rest = await pay_out(api)
    assert status == 201 and rest["amount"] == 3000
    assert rest["id"].startswith("po_") and rest["status"] == "paid"
    assert rest["automatic"] is False and len(rest["arrival_date"]) == 10
    assert await balance(api) == (0, 0)
    [move] = await transactions(api, f"&source_id={rest['id']}")
    assert (move["type"], move["amount"], move["id"]) == (
        "payout",
        -3000,
        rest["balance_transaction_id"],
    )

    received = await receiver.wait_for(lambda r: len(r) >= 2)
    data = sorted((orjson.loads(r.body)["data"] for r in received), key=lambda d: d["amount"])
    assert [(d["id"], d["status"], d["amount"]) for d in data] == [
        (part["id"], "paid", 290),
        (rest["id"], "paid", 3000),
    ]
    assert await api.call("GET", f"/v1/payouts/{part['id']}") == (200, part)
    status, listed = await api.call("GET", "/v1/payouts?limit=1")
    assert status == 200 and listed["data"] == [rest] and listed["has_more"]


async def test_live_keys_cannot_pay_out_on_request(make_api: Any, ctx: Context) -> None:
    live: Api = await make_api(env="live")
    await paid_live(live, ctx)
    status, problem = await pay_out(live)
    assert (status, problem["code"]) == (409, "sandbox_only")
    assert await balance(live) == (2349, 0)


@pytest.mark.settings(settlement_delay=3600.0)
async def test_funds_are_pending_until_the_settlement_delay_passed(api: Api) -> None:
    await paid(api, 2450)
    assert await balance(api) == (0, 2349)
    statuses = {t["type"]: t["status"] for t in await transactions(api)}
    assert statuses == {"payment": "pending", "fee": "pending"}
    status, problem = await pay_out(api)
    assert status == 422 and problem["errors"][0]["code"] == "insufficient_funds"


@pytest.mark.settings(payout_schedule="1s")
async def test_the_scheduler_pays_balances_out_on_schedule(api: Api, receiver: Receiver) -> None:
    await api.endpoint(receiver.url("/hook"), ["payout.paid"])
    await paid(api, 2450)
    [hook] = await receiver.wait_for(lambda r: len(r) >= 1, timeout=10)
    assert orjson.loads(hook.body)["data"]["amount"] == 2349
    assert await balance(api) == (0, 0)
    status, listed = await api.call("GET", "/v1/payouts")
    assert status == 200
    assert [(p["amount"], p["automatic"]) for p in listed["data"]] == [(2349, True)]


async def test_concurrent_schedulers_never_pay_a_balance_out_twice(
    settings: Settings, ctx: Context
) -> None:
    scopes = [Scope(await ctx.orgs.ensure(f"shop-{n}"), "test") for n in range(12)]
    now = now_ms()
    async with ctx.db.transaction() as unit:
        for n, scope in enumerate(scopes):
            await ctx.ledger.post(unit, scope, "CHF", "payment", 1000 + n, f"pay_{n}", now)
    schedule = PayoutSchedule.parse("daily")
    tomorrow = now + DAY_MS
    async with open_context(settings) as other:
        runs = [payouts.pay_out_due(c, schedule, tomorrow) for c in (ctx, other, ctx, other)]
        made = await asyncio.gather(*runs)
        assert sum(made) == len(scopes)
        assert await payouts.pay_out_due(other, schedule, tomorrow) == 0
    for n, scope in enumerate(scopes):
        found, _ = await ctx.payouts.listing(scope, 10, None)
        assert [p.amount for p in found] == [1000 + n]
        assert (await ctx.ledger.balance(scope, "CHF", tomorrow)).available == 0
    # The next period pays out what came in since, once.
    async with ctx.db.transaction() as unit:
        await ctx.ledger.post(unit, scopes[0], "CHF", "payment", 500, "pay_later", tomorrow)
    after = await asyncio.gather(
        *(payouts.pay_out_due(ctx, schedule, tomorrow + DAY_MS) for _ in range(3))
    )
    assert sum(after) == 1
