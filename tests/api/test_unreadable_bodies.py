"""A body the server cannot read is the client's error at every front door: a 400 Problem
from the API, a 400 page from the dashboard, never a 500."""

from __future__ import annotations

import uuid
from typing import Any

import aiohttp
import pytest

from tests.api.test_problems import problem_of
from tests.conftest import Api, Running

URLENCODED = "application/x-www-form-urlencoded"
BOUNDARY = "b0undary"
MULTIPART = f"multipart/form-data; boundary={BOUNDARY}"
NOT_GZIP = {"Content-Encoding": "gzip"}
"""A body sent as gzip that is not: aiohttp fails to read it, whatever it holds."""


def _multipart(part_headers: str, value: bytes = b"2450") -> bytes:
    head = f"--{BOUNDARY}\r\n{part_headers}\r\n\r\n".encode()
    return head + value + f"\r\n--{BOUNDARY}--\r\n".encode()


UNREADABLE_URLENCODED = {
    "unknown charset": ({"Content-Type": URLENCODED + "; charset=bogus"}, b"amount=2450"),
    "undecodable bytes": ({"Content-Type": URLENCODED}, b"amount=\xff\xfe"),
    "not gzip": ({"Content-Type": URLENCODED, **NOT_GZIP}, b"amount=2450"),
}
UNREADABLE_MULTIPART = {
    "no starting boundary": ({"Content-Type": MULTIPART}, b"amount=2450"),
    "part without a name": (
        {"Content-Type": MULTIPART},
        _multipart("Content-Disposition: form-data"),
    ),
    "unknown transfer encoding": (
        {"Content-Type": MULTIPART},
        _multipart('Content-Disposition: form-data; name="amount"\r\nContent-Transfer-Encoding: x'),
    ),
    "broken part header": (
        {"Content-Type": MULTIPART},
        _multipart('Content-Disposition: form-data; name="amount"\r\nno colon here'),
    ),
}
UNREADABLE = {**UNREADABLE_URLENCODED, **UNREADABLE_MULTIPART}


@pytest.fixture
async def http(service: Running) -> Any:
    async with aiohttp.ClientSession(base_url=service.base_url) as session:
        yield session


@pytest.mark.parametrize("case", UNREADABLE)
async def test_unreadable_sign_in_form_is_a_400_page(
    http: aiohttp.ClientSession, case: str
) -> None:
    headers, body = UNREADABLE[case]
    async with http.post("/dashboard/login", data=body, headers=headers) as response:
        text = await response.text()
        assert response.status == 400, text
        assert response.content_type == "text/html"
    assert "The form body cannot be read" in text


@pytest.mark.parametrize("case", UNREADABLE_URLENCODED)
async def test_unreadable_payment_form_is_a_400_problem(
    http: aiohttp.ClientSession, api: Api, case: str
) -> None:
    headers, body = UNREADABLE_URLENCODED[case]
    headers = {**api.headers, **headers, "Idempotency-Key": str(uuid.uuid4())}
    # The Idempotency-Key, which payment creation requires, has the body read before the
    # form is: one its Content-Encoding does not decode is refused there.
    code = "bad_request" if case == "not gzip" else "invalid_form"
    async with http.post("/v1/payments", data=body, headers=headers) as response:
        await problem_of(response, 400, code)


@pytest.mark.parametrize(("key", "code"), [(None, "invalid_json"), ("k1", "bad_request")])
async def test_undecodable_json_body_is_a_400_problem(
    http: aiohttp.ClientSession, api: Api, key: str | None, code: str
) -> None:
    headers = {**api.headers, "Content-Type": "application/json", **NOT_GZIP}
    if key is not None:
        headers["Idempotency-Key"] = key
    body = b'{"url": "https://shop.example/hooks", "events": ["payment.created"]}'
    async with http.post("/v1/webhook_endpoints", data=body, headers=headers) as response:
        await problem_of(response, 400, code)
