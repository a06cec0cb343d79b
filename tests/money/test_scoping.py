"""Money objects are scoped: another organisation, another environment and a partner without
``Svc-Organisation`` see none of them (404), and live keys have money of their own."""

from __future__ import annotations

from typing import Any

from svc.context import Context
from tests.conftest import Api
from tests.money.flows import balance, key, paid, paid_live, refund, transactions


async def test_another_scope_gets_404_for_every_money_object(
    api: Api, make_api: Any, ctx: Context
) -> None:
    payment = await paid(api, 5000)
    _, made = await refund(api, payment["id"], 1000)
    path = f"/v1/sandbox/payments/{payment['id']}/chargeback"
    _, chargeback = await api.call("POST", path, headers=key())
    await paid(api, 9000)
    _, payout = await api.call("POST", "/v1/payouts", headers=key())

    partner: Api = await make_api(org="platform")
    await ctx.orgs.mark_partner(await ctx.orgs.ensure("platform"))
    outsiders: list[Api] = [
        await make_api(org="globex"),  # another organisation
        await make_api(env="live"),  # the same organisation, the other environment
        partner,  # a partner, without the header
    ]
    reads = [
        f"/v1/payments/{payment['id']}",
        f"/v1/payments/{payment['id']}/refunds",
        f"/v1/refunds/{made['id']}",
        f"/v1/chargebacks/{chargeback['id']}",
        f"/v1/payouts/{payout['id']}",
    ]
    for outsider in outsiders:
        for read in reads:
            assert (await outsider.call("GET", read))[0] == 404, read
        status, problem = await refund(outsider, payment["id"])
        assert (status, problem["code"]) == (404, "payment_not_found")
        assert (await outsider.call("POST", path, headers=key()))[0] in (404, 409)
        for listing in ("/v1/chargebacks", "/v1/payouts", "/v1/balance_transactions"):
            status, body = await outsider.call("GET", listing)
            assert status == 200 and body["data"] == [], listing
        assert await balance(outsider) == (0, 0)
    assert len(await transactions(api)) == 9  # 2 payments with fees, refund and fee back,
    # chargeback and its fee, payout


async def test_live_keys_refund_and_read_their_own_money(make_api: Any, ctx: Context) -> None:
    live: Api = await make_api(env="live")
    test: Api = await make_api(env="test")
    payment = await paid_live(live, ctx, 2450)
    status, made = await refund(live, payment["id"], 450)
    assert status == 201 and made["environment"] == "live"
    _, settled = await live.call("GET", f"/v1/refunds/{made['id']}")
    assert settled["status"] == "succeeded"  # 05 declines only in the sandbox
    assert await balance(live) == (2349 - 450 + 18, 0)  # floor(101 × 450 / 2450) = 18 back
    status, body = await live.call("GET", "/v1/balance")
    assert body["environment"] == "live"
    assert await balance(test) == (0, 0)
    types = sorted(t["type"] for t in await transactions(live))
    assert types == ["fee", "fee_refund", "payment", "refund"]
