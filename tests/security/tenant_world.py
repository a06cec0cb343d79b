"""One organisation's objects of every kind a ``/v1`` path names, made through the API in its
test environment, and the keys of the scopes around it, which must see none of them.

The owner is organisation ``acme``'s test environment, a partner with one connected
organisation that has taken a payment (so the partner's lists of organisations and earnings
have something to hide). The outsiders are another organisation (a partner too, so it may call
the partner routes), the owner's live environment, the connected organisation's own key, the owner's
key acting for that connected organisation, and the other partner's key naming the owner's
organisation as one it acts for.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from harness.receivers import Receiver
from svc.context import Context
from tests.conftest import Api
from tests.money.flows import ALL_EVENTS, key, paid, refund

OWNER = "acme"
OTHER = "globex"
HEADER = "Svc-Organisation"


@dataclass
class Owner:
    """The owner's key and the ids of the objects made so far, by path parameter name."""

    api: Api
    receiver: Receiver
    ids: dict[str, str] = field(default_factory=dict)


Maker = Callable[[Owner], Awaitable[str]]


@dataclass(frozen=True)
class Outsider:
    """A key of another scope. ``connected`` says how the owner's connected organisation
    stands to it: ``foreign`` (never to be seen), ``org_wide`` (the owner's organisation in
    the other environment: it sees the organisation-wide lists) or ``own`` (it is that
    organisation)."""

    name: str
    api: Api
    connected: Literal["foreign", "org_wide", "own"]


@dataclass(frozen=True)
class World:
    owner: Owner
    outsiders: list[Outsider]
    connected_org: str


async def answer(api: Api, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
    """Status and body (JSON when it is JSON, else the text) of one request."""
    headers = {**api.headers, **kwargs.pop("headers", {})}
    async with api.session.request(method, path, headers=headers, **kwargs) as response:
        text = await response.text()
        return response.status, orjson.loads(text) if "json" in response.content_type else text


async def _made(api: Api, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
    status, body = await answer(api, method, path, headers=key(), **kwargs)
    assert status == 201, (path, body)
    assert isinstance(body, dict)
    return body


async def endpoint(owner: Owner) -> str:
    """An endpoint subscribed to every event, so the owner's events have delivery attempts."""
    made = await owner.api.endpoint(owner.receiver.url("/owner"), ALL_EVENTS)
    return str(made["id"])


async def payment(owner: Owner) -> str:
    return str((await paid(owner.api, 5000))["id"])


async def event(owner: Owner) -> str:
    """The payment's ``payment.succeeded`` event, once its delivery to the endpoint is logged."""
    payment_id = owner.ids["payment_id"]
    async with asyncio.timeout(10):
        while True:
            status, listed = await answer(owner.api, "GET", "/v1/events?limit=100")
            assert status == 200, listed
            found = [
                e["id"]
                for e in listed["data"]
                if e["type"] == "payment.succeeded" and e["data"]["id"] == payment_id
            ]
            if found:
                status, read = await answer(owner.api, "GET", f"/v1/events/{found[0]}")
                if status == 200 and read["deliveries"]:
                    return str(found[0])
            await asyncio.sleep(0.05)


async def api_key(owner: Owner) -> str:
    return str((await _made(owner.api, "POST", "/v1/api_keys", json={"name": "ci"}))["id"])


async def terminal(owner: Owner) -> str:
    """The sandbox's simulation terminal, made on the scope's first terminal call."""
    status, listed = await answer(owner.api, "GET", "/v1/terminals")
    assert status == 200, listed
    return str(next(t["id"] for t in listed["data"] if t["simulated"]))


async def refund_of_payment(owner: Owner) -> str:
    status, made = await refund(owner.api, owner.ids["payment_id"], 1000)
    assert status == 201, made
    return str(made["id"])


async def chargeback(owner: Owner) -> str:
    """A chargeback of a payment of its own, so the first one can still be refunded."""
    charged = await paid(owner.api, 2000)
    path = f"/v1/sandbox/payments/{charged['id']}/chargeback"
    return str((await _made(owner.api, "POST", path))["id"])


async def payout(owner: Owner) -> str:
    await paid(owner.api, 9000)
    return str((await _made(owner.api, "POST", "/v1/payouts"))["id"])


def acting(api: Api, org_id: str) -> Api:
    """The same key, asking to act for ``org_id`` (a partner's connected organisation)."""
    other = Api(api.session, api.key)
    other.headers = {**api.headers, HEADER: org_id}
    return other


async def build(
    ctx: Context,
    make_api: Callable[..., Awaitable[Api]],
    receiver: Receiver,
    makers: dict[str, Maker],
) -> World:
    """The owner with one object of each kind of ``makers`` (made in its order), its connected
    organisation with a payment, and the outsiders."""
    owner = Owner(await make_api(env="test", org=OWNER), receiver)
    other = await make_api(env="test", org=OTHER)
    for org in (OWNER, OTHER):
        await ctx.orgs.mark_partner(await ctx.orgs.ensure(org))
    for param, make in makers.items():
        owner.ids[param] = await make(owner)
    connected = await _made(
        owner.api, "POST", "/v1/organisations", json={"name": f"shop {uuid.uuid4().hex}"}
    )
    connected_key = Api(owner.api.session, str(connected["api_keys"]["test"]))
    await paid(connected_key, 3000)  # the owner's commission: a row of its earnings
    outsiders = [
        Outsider("another organisation", other, "foreign"),
        Outsider("the other environment", await make_api(env="live", org=OWNER), "org_wide"),
        Outsider("the connected organisation", connected_key, "own"),
        Outsider(
            "the owner acting for its connected organisation",
            acting(owner.api, str(connected["id"])),
            "own",
        ),
        Outsider(
            "another partner naming the owner's organisation",
            acting(other, await ctx.orgs.ensure(OWNER)),
            "foreign",
        ),
    ]
    return World(owner, outsiders, str(connected["id"]))
