"""Online payments end to end: creation, events at a real receiver, long poll, cancel, expiry."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest

from harness.receivers import Receiver
from svc.settings import Settings
from svc.signing import verify
from tests.conftest import Api


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return replace(settings, payment_expiry=60.0, expiry_sweep_interval=0.1)


async def create(api: Api, key: str | None = None, **fields: object) -> tuple[int, Any]:
    form = {
        "amount": "2450",
        "currency": "CHF",
        "channel": "online",
        "success_url": "https://shop.example/done",
        **fields,
    }
    headers = {"Idempotency-Key": key or uuid.uuid4().hex}
    return await api.call("POST", "/v1/payments", data=form, headers=headers)


def types_of(receiver: Receiver) -> list[str]:
    return [orjson.loads(r.body)["type"] for r in receiver.received]


async def test_create_returns_pending_payment_with_checkout_url(
    api: Api, settings: Settings
) -> None:
    status, body = await create(api)
    assert status == 201, body
    assert body["id"].startswith("pay_")
    assert body["status"] == "pending"
    assert body["amount"] == 2450 and body["currency"] == "CHF" and body["channel"] == "online"
    assert body["environment"] == "test"
    # By default the checkout page is the API's own, on whatever port it listens.
    base = f"http://127.0.0.1:{settings.http_port}/checkout/"
    assert body["checkout_url"].startswith(base + body["id"] + "/")
    async with api.session.get(body["checkout_url"]) as page:
        assert page.status == 200 and "CHF 24.50" in await page.text()
    status, read = await api.call("GET", f"/v1/payments/{body['id']}")
    assert status == 200 and read == body


@pytest.mark.settings(checkout_base_url="https://pay.example/shop/checkout/")
async def test_configured_checkout_base_url_wins(api: Api) -> None:
    _, payment = await create(api)
    url = urlsplit(payment["checkout_url"])
    assert (url.scheme, url.netloc) == ("https", "pay.example")
    assert url.path.startswith(f"/shop/checkout/{payment['id']}/")
    async with api.session.get(url.path) as page:  # the checkout host forwards the path
        assert page.status == 200
    async with api.session.get(url.path.replace("/shop/checkout/", "/checkout/")) as page:
        assert page.status == 404


async def test_every_state_reaches_a_receiver_signed(api: Api, receiver: Receiver) -> None:
    endpoint = await api.endpoint(receiver.url("/hook"), ["payment.created", "payment.canceled"])
    _, payment = await create(api)
    status, canceled = await api.call("POST", f"/v1/payments/{payment['id']}/cancel")
    assert status == 200 and canceled["status"] == "canceled"
    received = await receiver.wait_for(lambda r: len(r) >= 2)
    assert sorted(types_of(receiver)) == ["payment.canceled", "payment.created"]
    for request in received:
        verify(request.headers["Svc-Signature"], request.body, str(endpoint["secret"]))
        data = orjson.loads(request.body)["data"]
        assert data["id"] == payment["id"] and data["amount"] == 2450
        expected = {"payment.created": "pending", "payment.canceled": "canceled"}
        assert data["status"] == expected[orjson.loads(request.body)["type"]]


@pytest.mark.parametrize(
    ("fields", "field", "code"),
    [
        ({"amount": "24.50"}, "amount", "not_integer"),
        ({"amount": "0"}, "amount", "out_of_range"),
        ({"amount": "abc"}, "amount", "invalid_integer"),
        ({"currency": "EUR"}, "currency", "unsupported_currency"),
        ({"channel": "terminal"}, "channel", "unsupported_channel"),
        ({"success_url": "ftp://x"}, "success_url", "unsupported_scheme"),
        ({"colour": "red"}, "colour", "unknown_field"),
    ],
)
async def test_invalid_fields_are_named(
    api: Api, fields: dict[str, str], field: str, code: str
) -> None:
    status, body = await create(api, **fields)
    assert status == 422
    assert body["code"] == "validation_error"
    assert {"field": field, "code": code} == {k: body["errors"][0][k] for k in ("field", "code")}


@pytest.mark.parametrize("amount", ["-5", "1" + "0" * 30])
async def test_negative_or_huge_amount_is_out_of_range(api: Api, amount: str) -> None:
    status, body = await create(api, amount=amount)
    assert status == 422, body
    assert [(e["field"], e["code"]) for e in body["errors"]] == [("amount", "out_of_range")]


@pytest.mark.parametrize(
    ("form", "field"),
    [
        ([("amount", "100"), ("amount", "200")], "amount"),
        ([("amount", "100"), ("amount", "100")], "amount"),
        ([("amount", "100"), ("channel", "online"), ("channel", "phone")], "channel"),
    ],
)
async def test_a_field_sent_twice_is_named(
    api: Api, form: list[tuple[str, str]], field: str
) -> None:
    data = [*form, ("success_url", "https://shop.example/done")]
    headers = {"Idempotency-Key": uuid.uuid4().hex}
    status, body = await api.call("POST", "/v1/payments", data=data, headers=headers)
    assert status == 422, body
    assert [(e["field"], e["code"]) for e in body["errors"]] == [(field, "duplicate_field")]


async def test_json_body_is_unsupported_media_type(api: Api) -> None:
    status, body = await api.call(
        "POST", "/v1/payments", json={"amount": 2450}, headers={"Idempotency-Key": "k1"}
    )
    assert status == 415 and body["code"] == "unsupported_media_type"


async def test_long_poll_times_out_pending(api: Api) -> None:
    _, payment = await create(api)
    started = time.monotonic()
    status, body = await api.call("GET", f"/v1/payments/{payment['id']}?wait=1")
    assert status == 200 and body["status"] == "pending"
    assert 0.9 < time.monotonic() - started < 2.5


async def test_long_poll_wakes_on_final_state(api: Api) -> None:
    _, payment = await create(api)
    poll = asyncio.create_task(api.call("GET", f"/v1/payments/{payment['id']}?wait=20"))
    await asyncio.sleep(0.3)
    assert not poll.done()
    canceled_at = time.monotonic()
    await api.call("POST", f"/v1/payments/{payment['id']}/cancel")
    status, body = await poll
    assert status == 200 and body["status"] == "canceled"
    assert time.monotonic() - canceled_at < 0.5


@pytest.mark.parametrize("wait", ["31", "-1", "1.5", "x", ""])
async def test_wait_out_of_range_is_named(api: Api, wait: str) -> None:
    _, payment = await create(api)
    status, body = await api.call("GET", f"/v1/payments/{payment['id']}?wait={wait}")
    assert status == 422 and body["errors"][0]["field"] == "wait"


async def test_cancel_of_final_payment_is_conflict(api: Api) -> None:
    _, payment = await create(api)
    assert (await api.call("POST", f"/v1/payments/{payment['id']}/cancel"))[0] == 200
    assert (await api.call("POST", f"/v1/payments/{payment['id']}/cancel"))[0] == 200
    status, body = await api.call("GET", f"/v1/payments/{payment['id']}")
    assert body["status"] == "canceled" and body["cancel_reason"] == "requested"


async def test_unknown_payment_is_not_found(api: Api) -> None:
    for payment_id in ("pay_nothing", "pay_01jd0000000000000000000000"):
        status, body = await api.call("GET", f"/v1/payments/{payment_id}")
        assert status == 404 and body["code"] == "payment_not_found"


async def test_test_key_never_sees_live_and_orgs_never_see_each_other(make_api: Any) -> None:
    test_key: Api = await make_api(env="test", org="acme")
    live_key: Api = await make_api(env="live", org="acme")
    other_org: Api = await make_api(env="test", org="globex")
    _, live_payment = await create(live_key)
    assert live_payment["environment"] == "live"
    _, test_payment = await create(test_key)
    for api, payment in ((test_key, live_payment), (other_org, test_payment)):
        status, body = await api.call("GET", f"/v1/payments/{payment['id']}")
        assert status == 404 and body["code"] == "payment_not_found"
        status, _ = await api.call("POST", f"/v1/payments/{payment['id']}/cancel")
        assert status == 404
    assert (await live_key.call("GET", f"/v1/payments/{live_payment['id']}"))[0] == 200


@pytest.mark.parametrize(
    ("action", "status", "types"),
    [
        ("pay", "succeeded", ["payment.authorized", "payment.succeeded"]),
        ("decline", "failed", ["payment.failed"]),
        ("cancel", "canceled", ["payment.canceled"]),
    ],
)
async def test_checkout_page_plays_the_payment_and_returns_to_shop(
    api: Api, receiver: Receiver, action: str, status: str, types: list[str]
) -> None:
    await api.endpoint(receiver.url("/hook"), types)
    _, payment = await create(api)
    url = urlsplit(payment["checkout_url"]).path
    async with api.session.get(url) as page:
        assert page.status == 200 and page.content_type == "text/html"
        text = await page.text()
        assert "CHF 24.50" in text and 'value="pay"' in text
    async with api.session.post(url, data={"action": action}, allow_redirects=False) as answer:
        assert answer.status == 303
        assert answer.headers["Location"] == "https://shop.example/done"
    _, final = await api.call("GET", f"/v1/payments/{payment['id']}")
    assert final["status"] == status
    received = await receiver.wait_for(lambda r: len(r) >= len(types))
    assert sorted(types_of(receiver)) == sorted(types)
    assert len(received) == len(types)


async def test_checkout_link_needs_its_token(api: Api) -> None:
    _, payment = await create(api)
    url = urlsplit(payment["checkout_url"]).path
    forged = url.rsplit("/", 1)[0] + "/wrongtoken"
    async with api.session.post(forged, data={"action": "pay"}, allow_redirects=False) as answer:
        assert answer.status == 404
        assert (await answer.json(content_type=None))["code"] == "checkout_not_found"
    _, read = await api.call("GET", f"/v1/payments/{payment['id']}")
    assert read["status"] == "pending"
