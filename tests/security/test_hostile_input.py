"""Hostile input over HTTP: every input field of the API, thrown arbitrary text, other
scripts' digits, huge, negative and decimal numbers and long runs of zeros, is answered in
bounded time, never with a 500: a valid value is taken, anything else is a 4xx Problem, and
a 422 names the field. Form fields of the money routes, JSON fields of webhook endpoints and
API keys, and the query parameters of the list routes and the long poll.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api.input.endpoints import FIELDS
from api.input.payments import MAX_AMOUNT
from tests.conftest import Api

FORM = "application/x-www-form-urlencoded"
UNKNOWN_PAYMENT = "pay_" + "0" * 26
BOUNDED = 2.0
"""Seconds any answer may take (a quick refusal takes milliseconds)."""
EXAMPLES = settings(
    max_examples=500,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

TEXT = st.text(st.characters(codec="utf-8"), max_size=40)
DIGITS_OF_OTHER_SCRIPTS = st.text(
    st.characters(categories=["Nd", "No"], codec="utf-8"), min_size=1, max_size=12
)
NUMBER_TEXT = st.one_of(
    TEXT,
    DIGITS_OF_OTHER_SCRIPTS,
    st.integers().map(str),
    st.integers(min_value=-(10**600), max_value=10**600).map(str),
    st.floats().map(str),
    st.decimals(allow_nan=False, allow_infinity=False).map(str),
    st.sampled_from(["", "-", "-0", "0", "+5", " 5", "5 ", "1_000", "1e3", "0x10", "²", "٣"]),
    st.builds(
        lambda zeros, tail: "0" * zeros + tail,
        st.integers(min_value=0, max_value=60_000),
        st.sampled_from(["", "a", "!", "5", "2450", ".5", "-"]),
    ),
)
QUERY_TEXT = st.one_of(
    NUMBER_TEXT.filter(lambda text: len(text) <= 2_000),
    st.sampled_from(["2026-11-21T08:00:00Z", "pay_" + "0" * 26, "payment.created", "pending"]),
)
JSON_VALUE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**300), max_value=10**300)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
    | DIGITS_OF_OTHER_SCRIPTS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)


def _amount_valid(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= 32 and 1 <= int(text) <= MAX_AMOUNT


def _always_valid(_: str) -> bool:
    return True


FormCase = tuple[str, str, dict[str, str], Callable[[str], bool]]
FORM_FIELDS: list[FormCase] = [
    # (route, field, the other fields, whether a value is valid: then it may be taken)
    (
        "/v1/payments",
        "amount",
        {"success_url": "https://shop.example/done"},
        _amount_valid,
    ),
    (
        "/v1/payments",
        "currency",
        {"amount": "2450", "success_url": "https://shop.example/done"},
        lambda text: text == "CHF",
    ),
    (
        "/v1/payments",
        "channel",
        {"amount": "2450", "success_url": "https://shop.example/done"},
        lambda text: text in ("online", "phone"),
    ),
    ("/v1/payments", "success_url", {"amount": "2450"}, _always_valid),
    ("/v1/terminals/{terminal}/payments", "amount", {}, _amount_valid),
    ("/v1/terminals/{terminal}/payments", "currency", {"amount": "2450"}, lambda t: t == "CHF"),
    (
        "/v1/terminals/{terminal}/payments",
        "tip_prompt",
        {"amount": "2450"},
        lambda text: text.lower() in ("true", "false", "1", "0"),
    ),
    (f"/v1/payments/{UNKNOWN_PAYMENT}/refunds", "amount", {}, _amount_valid),
    ("/v1/payouts", "amount", {}, _amount_valid),
    ("/v1/payouts", "currency", {}, lambda text: text == "CHF"),
]


async def answered(
    api: Api, method: str, path: str, **kwargs: Any
) -> tuple[int, dict[str, Any], float]:
    """Status, Problem or body, and seconds taken; a 5xx or a 4xx that is no Problem fails."""
    headers = {**api.headers, **kwargs.pop("headers", {})}
    if method == "POST":
        headers["Idempotency-Key"] = uuid.uuid4().hex
    started = time.monotonic()
    async with api.session.request(method, path, headers=headers, **kwargs) as response:
        took = time.monotonic() - started
        assert response.status < 500, await response.text()
        if response.status >= 400:
            assert response.headers["Content-Type"] == "application/problem+json"
        body = await response.json(content_type=None)
        return response.status, body, took


def named_fields(body: dict[str, Any]) -> list[str]:
    return [error["field"] for error in body.get("errors", [])]


def check_refusal(
    status: int, body: dict[str, Any], took: float, field: str, valid: bool, value: object
) -> None:
    assert took < BOUNDED, f"{field}={value!r} took {took:.2f} s"
    assert body.get("code") != "route_not_found", body  # the case names a route that exists
    if not valid:
        assert status == 422, (field, value, status, body)
    if status == 422 and body["code"] == "validation_error":
        named = named_fields(body)
        assert any(name == field or name.startswith(field + "[") for name in named), (
            field,
            value,
            body,
        )


@pytest.fixture
async def terminal(api: Api) -> str:
    status, body = await api.call("GET", "/v1/terminals")
    assert status == 200 and isinstance(body, dict), body
    return str(body["data"][0]["id"])


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "route", ["/v1/payments", "/v1/terminals/{terminal}/payments", "refunds", "/v1/payouts"]
)
async def test_a_long_run_of_zeros_is_refused_at_once(api: Api, terminal: str, route: str) -> None:
    """Tens of thousands of zeros and a letter made the amount's pattern backtrack for
    seconds, holding every other request of the process."""
    path = f"/v1/payments/{UNKNOWN_PAYMENT}/refunds" if route == "refunds" else route
    data = {"amount": "0" * 30_000 + "a"}
    if route == "/v1/payments":
        data["success_url"] = "https://shop.example/done"
    status, body, took = await answered(
        api, "POST", path.format(terminal=terminal), data=data, headers={"Content-Type": FORM}
    )
    assert took < 0.5, f"{took:.2f} s"
    assert status == 422 and named_fields(body) == ["amount"], body
    assert body["errors"][0]["code"] == "invalid_integer"


@pytest.mark.timeout(120)
@EXAMPLES
@given(case=st.sampled_from(FORM_FIELDS), value=NUMBER_TEXT)
async def test_form_fields_refuse_hostile_values_with_a_problem_naming_them(
    api: Api, terminal: str, case: FormCase, value: str
) -> None:
    route, field, others, valid = case
    path = route.format(terminal=terminal)
    status, body, took = await answered(api, "POST", path, data={**others, field: value})
    check_refusal(status, body, took, field, valid(value), value)


ENDPOINT_FIELDS = sorted(FIELDS)
"""The fields of an endpoint's creation and change bodies, in a fixed order."""
VALID_ENDPOINT = {"url": "https://hooks.example/in", "events": ["payment.created"]}


async def post_json(api: Api, method: str, path: str, body: object) -> tuple[int, Any, float]:
    """JSON of any size of number (the standard library writes what orjson cannot)."""
    data = json.dumps(body).encode()
    return await answered(
        api, method, path, data=data, headers={"Content-Type": "application/json"}
    )


@pytest.fixture
async def endpoint_id(api: Api) -> str:
    return str((await api.endpoint("https://hooks.example/in", ["payment.created"]))["id"])


@pytest.fixture
async def other_key_id(api: Api) -> str:
    status, body, _ = await post_json(api, "POST", "/v1/api_keys", {"name": "rolled"})
    assert status == 201, body
    return str(body["id"])


@pytest.mark.timeout(120)
@EXAMPLES
@given(
    case=st.sampled_from(
        [("create", name) for name in ENDPOINT_FIELDS]
        + [("update", name) for name in ENDPOINT_FIELDS]
        + [("rotate", "expire_previous_in"), ("recover", "since")]
        + [("key", name) for name in ("name", "permissions", "expires_at")]
        + [("roll", "expire_previous_in")]
    ),
    value=JSON_VALUE,
)
async def test_json_fields_refuse_hostile_values_with_a_problem_naming_them(
    api: Api, endpoint_id: str, other_key_id: str, case: tuple[str, str], value: object
) -> None:
    kind, field = case
    endpoint = f"/v1/webhook_endpoints/{endpoint_id}"
    method, path, body = {
        "create": ("POST", "/v1/webhook_endpoints", {**VALID_ENDPOINT, field: value}),
        "update": ("PATCH", endpoint, {field: value}),
        "rotate": ("POST", endpoint + "/rotate_secret", {field: value}),
        "recover": ("POST", endpoint + "/recover", {field: value}),
        "key": ("POST", "/v1/api_keys", {field: value}),
        "roll": ("POST", f"/v1/api_keys/{other_key_id}/roll", {field: value}),
    }[kind]
    status, answer, took = await post_json(api, method, path, body)
    check_refusal(status, answer, took, field, True, value)


LIST_QUERIES: list[tuple[str, str]] = [
    (route, name)
    for route, names in [
        (
            "/v1/payments",
            ("limit", "cursor", "status", "channel", "terminal_id", "created[gte]", "created[lt]"),
        ),
        ("/v1/refunds", ("limit", "cursor", "payment_id", "status", "created[gte]")),
        ("/v1/events", ("limit", "cursor", "type", "created[gte]", "created[lt]")),
        ("/v1/webhook_endpoints", ("limit", "cursor")),
        ("/v1/webhook_endpoints/{endpoint}/deliveries", ("limit", "cursor")),
        ("/v1/balance_transactions", ("limit", "cursor", "source_id")),
        ("/v1/payouts", ("limit", "cursor")),
        ("/v1/chargebacks", ("limit", "cursor")),
        ("/v1/api_keys", ("limit", "cursor")),
        (f"/v1/payments/{UNKNOWN_PAYMENT}/refunds", ("limit", "cursor")),
        ("/v1/payments/{payment}", ("wait",)),
    ]
    for name in names
]


@pytest.fixture
async def final_payment(api: Api) -> str:
    """A canceled payment: a valid ``wait`` on it answers at once."""
    status, body, _ = await answered(
        api,
        "POST",
        "/v1/payments",
        data={"amount": "2450", "success_url": "https://shop.example/done"},
    )
    assert status == 201, body
    status, _, _ = await answered(api, "POST", f"/v1/payments/{body['id']}/cancel")
    assert status == 200
    return str(body["id"])


@pytest.mark.timeout(120)
@EXAMPLES
@given(case=st.sampled_from(LIST_QUERIES), value=QUERY_TEXT)
async def test_query_parameters_refuse_hostile_values_with_a_problem_naming_them(
    api: Api, endpoint_id: str, final_payment: str, case: tuple[str, str], value: str
) -> None:
    route, name = case
    path = route.format(endpoint=endpoint_id, payment=final_payment)
    status, body, took = await answered(api, "GET", path, params={name: value})
    check_refusal(status, body, took, name, True, value)
