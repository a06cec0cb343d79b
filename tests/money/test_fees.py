"""Fees by channel and per organisation, on payments played through the API."""

from __future__ import annotations

import asyncio
import sys
import uuid

import pytest

from cli import admin
from harness.processes import environment
from svc.settings import Settings
from tests.conftest import Api
from tests.money.flows import paid, transactions


async def svc(settings: Settings, *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cli",
        *args,
        env=environment(settings),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_an_organisation_pays_its_own_prices(api: Api, settings: Settings) -> None:
    code, out, _ = await svc(settings, "pricing", "set", "--org", "acme", "online=2.5%+25")
    assert code == 0
    assert out.strip() == "online=2.5%+25,phone=3.4%+30,terminal=1.7%+10,chargeback=1500"
    payment = await paid(api, 2450)
    assert payment["fee"] == 61 + 25  # 61.25 → 61
    moves = {t["type"]: t["amount"] for t in await transactions(api)}
    assert moves == {"payment": 2450, "fee": -86}

    prices = await admin.set_pricing(settings, "acme", "", reset=True)  # what --reset does
    assert prices.startswith("online=2.9%+30,")
    assert (await paid(api, 2450))["fee"] == 101
    code, _, err = await svc(settings, "pricing", "set", "--org", "acme", "online=lots")
    assert code == 2 and "2.9%+30" in err
    assert await admin.set_pricing(settings, "acme", "", reset=False) == prices  # show
    with pytest.raises(ValueError, match="no organisation called 'nobody'"):
        await admin.set_pricing(settings, "nobody", "", reset=False)
    assert "nobody" not in {name for _, name in await admin.list_orgs(settings)}


@pytest.mark.settings(terminal_step_delay=0.05)
async def test_a_terminal_payment_pays_its_fee_on_amount_and_tip(api: Api) -> None:
    status, terminals = await api.call("GET", "/v1/terminals")
    assert status == 200
    [terminal] = terminals["data"]
    status, payment = await api.call(
        "POST",
        f"/v1/terminals/{terminal['id']}/payments",
        data={"amount": "2450", "tip_prompt": "true"},
        headers={"Idempotency-Key": uuid.uuid4().hex},
    )
    assert status == 201, payment
    status, done = await api.call("GET", f"/v1/payments/{payment['id']}?wait=10")
    assert done["status"] == "succeeded" and done["total_amount"] == 2695
    assert done["fee"] == 46 + 10  # 1.7 % of 2695 = 45.815 → 46
