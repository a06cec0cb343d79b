"""The partner programme: connected organisations, acting for them, and the 10 % share."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

import aiohttp
import pytest

from harness.processes import environment
from svc.context import Context
from svc.db.times import now_ms
from svc.money.flow import payouts
from svc.money.model.schedule import DAY_MS, PayoutSchedule
from svc.settings import Settings
from tests.conftest import Api, Running
from tests.money.flows import balance, paid, refund, transactions

HEADER = "Svc-Organisation"


@pytest.fixture
async def partner(make_api: Any, ctx: Context) -> Api:
    """A test key of a partner organisation."""
    api: Api = await make_api(org="platform")
    await ctx.orgs.mark_partner(await ctx.orgs.ensure("platform"))
    return api


async def connect(partner: Api, name: str) -> dict[str, Any]:
    status, body = await partner.call("POST", "/v1/organisations", json={"name": name})
    assert status == 201, body
    assert isinstance(body, dict)
    return body


def acting(api: Api, org_id: str) -> Api:
    """The same key, acting for ``org_id``."""
    other = Api(api.session, api.key)
    other.headers = {**api.headers, HEADER: org_id}
    return other


async def test_svc_keys_create_partner_prints_the_key_alone(
    settings: Settings, ctx: Context
) -> None:
    command = ["-m", "cli", "keys", "create", "--env", "test", "--org", "hub", "--partner"]
    process = await asyncio.create_subprocess_exec(
        sys.executable, *command, env=environment(settings), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await process.communicate()
    assert process.returncode == 0 and out.decode().count("\n") == 1
    scope = await ctx.api_keys.resolve(out.decode().strip())
    assert scope is not None and scope.env == "test"
    assert await ctx.orgs.is_partner(scope.org)


async def test_a_partner_creates_organisations_with_keys_shown_once(
    partner: Api, api: Api, service: Running
) -> None:
    created = await connect(partner, "Bakery Müller")
    assert created["id"].startswith("org_") and created["object"] == "organisation"
    keys = created["api_keys"]
    assert keys["test"].startswith("svc_test_") and keys["live"].startswith("svc_live_")
    async with aiohttp.ClientSession(base_url=service.base_url) as session:
        for env, key in keys.items():
            own = Api(session, key)
            status, body = await own.call("GET", "/v1/balance")
            assert status == 200 and body["environment"] == env

    second = await connect(partner, "Florist Meier")
    status, listed = await partner.call("GET", "/v1/organisations?limit=1")
    assert status == 200 and listed["has_more"]
    assert [o["id"] for o in listed["data"]] == [second["id"]]
    assert "api_keys" not in listed["data"][0]
    status, rest = await partner.call("GET", f"/v1/organisations?cursor={listed['next_cursor']}")
    assert [o["id"] for o in rest["data"]] == [created["id"]]

    status, problem = await partner.call("POST", "/v1/organisations", json={"name": "acme"})
    assert (status, problem["code"]) == (409, "organisation_name_taken")
    assert problem["errors"][0]["field"] == "name"
    status, problem = await partner.call("POST", "/v1/organisations", json={"name": ""})
    assert status == 422 and problem["errors"][0]["field"] == "name"
    for path in ("/v1/organisations", "/v1/partner/earnings"):  # acme is no partner
        status, problem = await api.call("GET", path)
        assert (status, problem["code"]) == (403, "partner_only")
    status, problem = await api.call("POST", "/v1/organisations", json={"name": "x"})
    assert (status, problem["code"]) == (403, "partner_only")


async def test_the_header_acts_for_a_connected_organisation_and_nothing_else(
    partner: Api, make_api: Any, ctx: Context, service: Running
) -> None:
    shop = await connect(partner, "shop")
    payment = await paid(acting(partner, shop["id"]), 2450)
    async with aiohttp.ClientSession(base_url=service.base_url) as session:
        own = Api(session, shop["api_keys"]["test"])
        status, seen = await own.call("GET", f"/v1/payments/{payment['id']}")
        assert status == 200 and seen["fee"] == 101
        live = Api(session, shop["api_keys"]["live"])
        assert (await live.call("GET", f"/v1/payments/{payment['id']}"))[0] == 404
        # A key that is not a partner's cannot act for anyone, itself included.
        status, problem = await acting(own, shop["id"]).call("GET", "/v1/balance")
        assert (status, problem["code"]) == (404, "organisation_not_found")

    # Without the header the partner acts for itself and sees none of the shop's data.
    assert (await partner.call("GET", f"/v1/payments/{payment['id']}"))[0] == 404
    assert (await partner.call("GET", f"/v1/payments/{payment['id']}/refunds"))[0] == 404
    assert await balance(partner) == (7, 0)  # its commission only

    # The request's own checks answer first: a missing key, an unknown method.
    status, problem = await acting(partner, "nope").call("POST", "/v1/payouts")
    assert (status, problem["code"]) == (400, "idempotency_key_missing")
    status, problem = await acting(partner, "nope").call("PATCH", "/v1/balance")
    assert (status, problem["code"]) == (405, "method_not_allowed")

    other: Api = await make_api(org="other-platform")
    await ctx.orgs.mark_partner(await ctx.orgs.ensure("other-platform"))
    elsewhere = await connect(other, "other-shop")
    own_id = await ctx.orgs.ensure("platform")
    for org_id in (elsewhere["id"], "org_" + "0" * 26, "shop", own_id):
        status, problem = await acting(partner, org_id).call("GET", "/v1/balance")
        assert (status, problem["code"]) == (404, "organisation_not_found"), org_id
        path = f"/v1/payments/{payment['id']}"
        assert (await acting(other, org_id).call("GET", path))[0] == 404


async def test_the_partner_earns_10_percent_of_percentage_fees_and_refunds_take_it_back(
    partner: Api, make_api: Any
) -> None:
    shop = acting(partner, (await connect(partner, "shop"))["id"])
    kept = await paid(shop, 10_000)  # 2.9 % = 290 → commission 29
    refunded = await paid(shop, 2450)  # 2.9 % = 71.05 → 71 → commission 7
    await paid(shop, 2000, channel="phone")  # 3.4 % = 68 → commission 6
    assert await balance(partner) == (29 + 7 + 6, 0)
    commissions = await transactions(partner)
    assert {t["type"] for t in commissions} == {"partner_commission"}
    assert {t["connected_organisation_id"] for t in commissions} == {shop.headers[HEADER]}

    assert (await refund(shop, refunded["id"], 1225))[0] == 201  # half: 3 of 7 taken back
    assert await balance(partner) == (29 + 4 + 6, 0)
    assert (await refund(shop, refunded["id"]))[0] == 201  # the rest: all 7 taken back
    assert await balance(partner) == (29 + 6, 0)
    # A chargeback keeps the fee, so the commission on it stays.
    path = f"/v1/sandbox/payments/{kept['id']}/chargeback"
    assert (await shop.call("POST", path, headers={"Idempotency-Key": "cb-1"}))[0] == 201
    assert await balance(partner) == (29 + 6, 0)

    status, earnings = await partner.call("GET", "/v1/partner/earnings")
    assert status == 200, earnings
    month = time.strftime("%Y-%m", time.gmtime())
    assert earnings["data"] == [
        {"organisation_id": shop.headers[HEADER], "month": month, "currency": "CHF", "amount": 35}
    ]
    florist = acting(partner, (await connect(partner, "florist"))["id"])
    await paid(florist, 1000)  # 2.9 % = 29 → commission 2
    status, first = await partner.call("GET", "/v1/partner/earnings?limit=1")
    assert status == 200 and first["has_more"]
    status, rest = await partner.call(
        "GET", f"/v1/partner/earnings?limit=1&cursor={first['next_cursor']}"
    )
    assert status == 200 and not rest["has_more"]
    rows = [(e["organisation_id"], e["amount"]) for e in first["data"] + rest["data"]]
    assert rows == [(florist.headers[HEADER], 2), (shop.headers[HEADER], 35)]
    # Earnings are per environment: the live key has none.
    live: Api = await make_api(env="live", org="platform")
    status, body = await live.call("GET", "/v1/partner/earnings")
    assert status == 200 and body["data"] == []


@pytest.mark.settings(terminal_step_delay=0.05)
async def test_the_worked_example_of_the_partners_page(partner: Api, ctx: Context) -> None:
    bakery = acting(partner, (await connect(partner, "bakery"))["id"])
    payment = await paid(bakery, 2450)
    assert (payment["fee"], await balance(bakery), await balance(partner)) == (
        101,
        (2349, 0),
        (7, 0),
    )
    assert (await refund(bakery, payment["id"], 1000))[0] == 201
    assert (await balance(bakery), await balance(partner)) == ((1390, 0), (5, 0))
    path = f"/v1/sandbox/payments/{payment['id']}/chargeback"
    status, chargeback = await bakery.call("POST", path)
    assert (status, chargeback["amount"], chargeback["fee"]) == (201, 1450, 1500)
    assert (await balance(bakery), await balance(partner)) == ((-1560, 0), (5, 0))

    _, terminals = await bakery.call("GET", "/v1/terminals")
    terminal_id = terminals["data"][0]["id"]
    status, started = await bakery.call(
        "POST",
        f"/v1/terminals/{terminal_id}/payments",
        data={"amount": "10000"},
        headers={"Idempotency-Key": "t1"},
    )
    assert status == 201, started
    _, done = await bakery.call("GET", f"/v1/payments/{started['id']}?wait=10")
    assert (done["status"], done["fee"]) == ("succeeded", 180)
    assert (await balance(bakery), await balance(partner)) == ((8260, 0), (22, 0))

    tomorrow = now_ms() + DAY_MS
    assert await payouts.pay_out_due(ctx, PayoutSchedule.parse("daily"), tomorrow) == 2
    _, paid_out = await bakery.call("GET", "/v1/payouts")
    assert [p["amount"] for p in paid_out["data"]] == [8260]
    _, partner_paid = await partner.call("GET", "/v1/payouts")
    assert [p["amount"] for p in partner_paid["data"]] == [22]
