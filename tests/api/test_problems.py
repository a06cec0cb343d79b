"""Every error is an RFC 9457 Problem with a stable code, including aiohttp's own errors."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from api.app import MAX_BODY
from api.middleware.errors import problem_middleware
from tests.conftest import Api, Running

ENDPOINTS = "/v1/webhook_endpoints"


async def problem_of(response: aiohttp.ClientResponse, status: int, code: str) -> dict[str, Any]:
    """The Problem body, after checking the members every Problem has."""
    assert response.status == status, await response.text()
    assert response.headers["Content-Type"] == "application/problem+json"
    body = await response.json(content_type="application/problem+json")
    assert body["code"] == code, body
    assert body["status"] == status
    assert body["type"] == f"/problems/{code}"
    assert isinstance(body["title"], str) and body["title"]
    assert isinstance(body["detail"], str) and body["detail"]
    return dict(body)


@pytest.fixture
async def http(service: Running) -> Any:
    async with aiohttp.ClientSession(base_url=service.base_url) as session:
        yield session


@pytest.mark.parametrize("path", ["/nowhere", "/v1/nowhere", "/v1/webhook_endpoints/we_1/x"])
async def test_unknown_route_is_404(http: aiohttp.ClientSession, api: Api, path: str) -> None:
    async with http.get(path, headers=api.headers) as response:
        await problem_of(response, 404, "route_not_found")


async def test_unknown_id_is_404_with_its_own_code(http: aiohttp.ClientSession, api: Api) -> None:
    async with http.get(ENDPOINTS + "/we_unknown", headers=api.headers) as response:
        await problem_of(response, 404, "endpoint_not_found")
    async with http.post("/v1/events/evt_unknown/resend", headers=api.headers) as response:
        await problem_of(response, 404, "event_not_found")


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", ENDPOINTS, {"GET", "POST"}),
        ("PUT", ENDPOINTS + "/we_x", {"GET", "DELETE", "PATCH"}),
        ("POST", "/health", {"GET"}),
        ("HEAD", "/openapi.json", {"GET"}),
    ],
)
async def test_wrong_method_is_405_with_allow(
    http: aiohttp.ClientSession, api: Api, method: str, path: str, allowed: set[str]
) -> None:
    async with http.request(method, path, headers=api.headers) as response:
        assert response.status == 405
        assert {m.strip() for m in response.headers["Allow"].split(",")} == allowed
        if method != "HEAD":  # a HEAD answer has no body to read
            await problem_of(response, 405, "method_not_allowed")


async def test_wrong_content_type_is_415(http: aiohttp.ClientSession, api: Api) -> None:
    headers = {**api.headers, "Content-Type": "application/x-www-form-urlencoded"}
    async with http.post(ENDPOINTS, data="url=https://a.example", headers=headers) as response:
        await problem_of(response, 415, "unsupported_media_type")


async def test_oversized_body_is_413(http: aiohttp.ClientSession, api: Api) -> None:
    description = "x" * MAX_BODY
    body = {
        "url": "https://a.example/hook",
        "events": ["payment.created"],
        "description": description,
    }
    async with http.post(ENDPOINTS, json=body, headers=api.headers) as response:
        await problem_of(response, 413, "payload_too_large")


@pytest.mark.parametrize("raw", [b"{", b"[1, 2]", b"", b'"\\ud800"'])
async def test_malformed_json_is_400(http: aiohttp.ClientSession, api: Api, raw: bytes) -> None:
    headers = {**api.headers, "Content-Type": "application/json"}
    async with http.post(ENDPOINTS, data=raw, headers=headers) as response:
        await problem_of(response, 400, "invalid_json")


@pytest.mark.parametrize(
    ("authorization", "code"),
    [
        (None, "missing_api_key"),
        ("Basic dXNlcjpwYXNz", "invalid_authorization"),
        ("Bearer", "invalid_authorization"),
        ("Bearer svc_test_not_a_key", "invalid_api_key"),
        ("Bearer svc_live_not_a_key", "invalid_api_key"),
    ],
)
async def test_bad_credentials_are_401(
    http: aiohttp.ClientSession, authorization: str | None, code: str
) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    async with http.get(ENDPOINTS, headers=headers) as response:
        await problem_of(response, 401, code)
        assert response.headers["WWW-Authenticate"].startswith("Bearer")


async def test_a_test_key_marked_live_is_rejected(http: aiohttp.ClientSession, api: Api) -> None:
    forged = api.key.replace("svc_test_", "svc_live_", 1)
    async with http.get(ENDPOINTS, headers={"Authorization": f"Bearer {forged}"}) as response:
        await problem_of(response, 401, "invalid_api_key")


async def test_invalid_fields_are_422_naming_each_field(
    http: aiohttp.ClientSession, api: Api
) -> None:
    body = {"url": "ftp://a.example", "events": ["payment.created", "nope"], "colour": "red"}
    async with http.post(ENDPOINTS, json=body, headers=api.headers) as response:
        problem = await problem_of(response, 422, "validation_error")
    errors = {error["field"]: error for error in problem["errors"]}
    assert set(errors) == {"url", "events[1]", "colour"}
    assert errors["url"]["code"] == "unsupported_scheme"
    assert errors["events[1]"]["code"] == "unknown_event_type"
    assert errors["colour"]["code"] == "unknown_field"
    assert all(isinstance(e["detail"], str) and e["detail"] for e in problem["errors"])


@pytest.mark.parametrize(
    "query", ["limit=0", "limit=101", "limit=x", "limit=%C2%B2", "limit=" + "9" * 5000]
)
async def test_bad_page_size_is_422(http: aiohttp.ClientSession, api: Api, query: str) -> None:
    async with http.get(f"{ENDPOINTS}?{query}", headers=api.headers) as response:
        problem = await problem_of(response, 422, "validation_error")
    assert [e["field"] for e in problem["errors"]] == ["limit"]


@pytest.mark.parametrize(
    "cursor", ["abc", "0-0", "1-2%0A", "%D9%A3-%D9%A3", "99999999999999999999-0", "-1-0"]
)
async def test_bad_log_cursor_is_422(http: aiohttp.ClientSession, api: Api, cursor: str) -> None:
    endpoint = await api.endpoint("https://a.example/hook", ["payment.created"])
    path = f"{ENDPOINTS}/{endpoint['id']}/deliveries?cursor={cursor}"
    async with http.get(path, headers=api.headers) as response:
        problem = await problem_of(response, 422, "validation_error")
    assert [e["field"] for e in problem["errors"]] == ["cursor"]


async def test_unhandled_error_is_a_500_problem() -> None:
    """A bug in a handler still answers a Problem, never a traceback."""

    async def broken(request: web.Request) -> web.Response:
        raise RuntimeError("a bug")

    app = web.Application(middlewares=[problem_middleware])
    app.router.add_get("/broken", broken)
    async with TestClient(TestServer(app)) as client:
        response = await client.get("/broken")
        await problem_of(response, 500, "internal_error")


async def test_payment_form_as_json_is_415(http: aiohttp.ClientSession, api: Api) -> None:
    headers = {**api.headers, "Idempotency-Key": "json-body"}
    body = {"amount": 2450, "success_url": "https://shop.example/done"}
    async with http.post("/v1/payments", json=body, headers=headers) as response:
        await problem_of(response, 415, "unsupported_media_type")


async def test_payment_without_idempotency_key_is_400(
    http: aiohttp.ClientSession, api: Api
) -> None:
    form = {"amount": "2450", "success_url": "https://shop.example/done"}
    async with http.post("/v1/payments", data=form, headers=api.headers) as response:
        problem = await problem_of(response, 400, "idempotency_key_missing")
    assert [e["field"] for e in problem["errors"]] == ["Idempotency-Key"]


async def test_decimal_amount_is_422_naming_amount(http: aiohttp.ClientSession, api: Api) -> None:
    headers = {**api.headers, "Idempotency-Key": "decimal"}
    form = {"amount": "24.50", "success_url": "https://shop.example/done"}
    async with http.post("/v1/payments", data=form, headers=headers) as response:
        problem = await problem_of(response, 422, "validation_error")
    assert [(e["field"], e["code"]) for e in problem["errors"]] == [("amount", "not_integer")]


async def test_a_success_url_with_a_control_character_is_422(
    http: aiohttp.ClientSession, api: Api
) -> None:
    headers = {**api.headers, "Idempotency-Key": str(uuid.uuid4())}
    form = {"amount": "2450", "success_url": "https://shop.example/done\x00"}
    async with http.post("/v1/payments", data=form, headers=headers) as response:
        problem = await problem_of(response, 422, "validation_error")
    assert [(e["field"], e["code"]) for e in problem["errors"]] == [("success_url", "invalid_url")]


@pytest.mark.parametrize("wait", ["31", "-1", "1.5", "x", ""])
async def test_bad_wait_is_422_naming_wait(
    http: aiohttp.ClientSession, api: Api, wait: str
) -> None:
    path = f"/v1/payments/pay_{'0' * 26}?wait={wait}"
    async with http.get(path, headers=api.headers) as response:
        problem = await problem_of(response, 422, "validation_error")
    assert [e["field"] for e in problem["errors"]] == ["wait"]


async def test_unknown_terminal_is_404(http: aiohttp.ClientSession, api: Api) -> None:
    async with http.get(f"/v1/terminals/trm_{'0' * 26}", headers=api.headers) as response:
        await problem_of(response, 404, "terminal_not_found")


async def test_plain_get_of_a_websocket_route_is_426(http: aiohttp.ClientSession, api: Api) -> None:
    headers = {**api.headers, "Idempotency-Key": "ws"}
    form = {"amount": "2450", "success_url": "https://shop.example/done"}
    async with http.post("/v1/payments", data=form, headers=headers) as response:
        assert response.status == 201
        payment = await response.json()
    async with http.get(f"/v1/payments/{payment['id']}/stream", headers=api.headers) as response:
        await problem_of(response, 426, "websocket_required")
        assert response.headers["Upgrade"] == "websocket"
    async with http.get("/terminal/v1/connect") as response:
        await problem_of(response, 401, "invalid_terminal_secret")


async def test_unreadable_payment_form_is_400(http: aiohttp.ClientSession, api: Api) -> None:
    content_type = "application/x-www-form-urlencoded; charset=bogus"
    headers = {**api.headers, "Idempotency-Key": str(uuid.uuid4()), "Content-Type": content_type}
    async with http.post("/v1/payments", data=b"amount=2450", headers=headers) as response:
        await problem_of(response, 400, "invalid_form")


URLENCODED = "application/x-www-form-urlencoded"


@pytest.mark.parametrize(
    ("content_type", "body", "status", "code", "field"),
    [
        (URLENCODED + "; charset=bogus", b"action=pay", 400, "invalid_form", None),
        ("multipart/form-data; boundary=zz", b"garbage", 415, "unsupported_media_type", None),
        (URLENCODED, b"action=pay&card=4242", 422, "validation_error", ("card", "unknown_field")),
        (
            URLENCODED,
            b"action=pay&action=cancel",
            422,
            "validation_error",
            ("action", "duplicate_field"),
        ),
        (URLENCODED, b"", 422, "validation_error", ("action", "required")),
        (URLENCODED, b"action=refund", 422, "validation_error", ("action", "invalid_choice")),
    ],
)
async def test_a_checkout_form_the_page_did_not_send_is_refused_and_changes_nothing(
    http: aiohttp.ClientSession,
    api: Api,
    content_type: str,
    body: bytes,
    status: int,
    code: str,
    field: tuple[str, str] | None,
) -> None:
    form = {"amount": "2450", "success_url": "https://shop.example/done"}
    headers = {**api.headers, "Idempotency-Key": str(uuid.uuid4())}
    async with http.post("/v1/payments", data=form, headers=headers) as response:
        created = await response.json()
    checkout = urlsplit(created["checkout_url"]).path
    async with http.post(checkout, data=body, headers={"Content-Type": content_type}) as response:
        problem = await problem_of(response, status, code)
    if field is not None:
        assert {"field": field[0], "code": field[1]} in [
            {"field": e["field"], "code": e["code"]} for e in problem["errors"]
        ]
    async with http.get(f"/v1/payments/{created['id']}", headers=api.headers) as response:
        assert (await response.json())["status"] == "pending"
