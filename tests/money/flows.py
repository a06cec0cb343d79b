"""Money flows through the API, shared by the money tests."""

from __future__ import annotations

import uuid
from typing import Any

from svc.context import Context
from svc.envelope import EVENT_TYPES
from svc.payments import flow
from tests.conftest import Api

ALL_EVENTS = list(EVENT_TYPES)
"""Every event type, as the list an endpoint subscribes to."""


def key() -> dict[str, str]:
    return {"Idempotency-Key": uuid.uuid4().hex}


async def create(api: Api, amount: int = 2450, channel: str = "online") -> dict[str, Any]:
    form = {"amount": str(amount), "channel": channel, "success_url": "https://shop.example/"}
    status, body = await api.call("POST", "/v1/payments", data=form, headers=key())
    assert status == 201, body
    assert isinstance(body, dict)
    return body


async def checkout(api: Api, payment: dict[str, Any], action: str = "pay") -> dict[str, Any]:
    """Play the sandbox checkout page; the payment as it is afterwards."""
    async with api.session.post(
        payment["checkout_url"], data={"action": action}, allow_redirects=False
    ) as response:
        assert response.status == 303, await response.text()
    status, body = await api.call("GET", f"/v1/payments/{payment['id']}")
    assert status == 200
    assert isinstance(body, dict)
    return body


async def paid(api: Api, amount: int = 2450, channel: str = "online") -> dict[str, Any]:
    """A succeeded test-environment payment of ``amount`` Rappen."""
    payment = await checkout(api, await create(api, amount, channel))
    assert payment["status"] == "succeeded", payment
    return payment


async def paid_live(api: Api, ctx: Context, amount: int = 2450) -> dict[str, Any]:
    """A succeeded live payment: live checkout has no sandbox buttons, so the kernel plays
    the card network's part."""
    payment = await create(api, amount)
    assert await flow.complete(ctx, payment["id"]) is not None
    status, body = await api.call("GET", f"/v1/payments/{payment['id']}")
    assert status == 200 and body["status"] == "succeeded"  # type: ignore[index]
    assert isinstance(body, dict)
    return body


async def refund(
    api: Api, payment_id: str, amount: int | None = None
) -> tuple[int, dict[str, Any]]:
    data = {} if amount is None else {"amount": str(amount)}
    path = f"/v1/payments/{payment_id}/refunds"
    status, body = await api.call("POST", path, data=data, headers=key())
    assert isinstance(body, dict)
    return status, body


async def balance(api: Api) -> tuple[int, int]:
    """(available, pending) in CHF."""
    status, body = await api.call("GET", "/v1/balance")
    assert status == 200, body
    assert isinstance(body, dict)
    available = {b["currency"]: b["amount"] for b in body["available"]}["CHF"]
    pending = {b["currency"]: b["amount"] for b in body["pending"]}["CHF"]
    return available, pending


async def transactions(api: Api, query: str = "") -> list[dict[str, Any]]:
    status, body = await api.call("GET", f"/v1/balance_transactions?limit=100{query}")
    assert status == 200, body
    assert isinstance(body, dict)
    data: list[dict[str, Any]] = body["data"]
    return data
