"""What a client sent wrong is said plainly: a Problem's ``type`` leads to a page that lists
its code, and a credential that is no API key is answered with what a key looks like."""

from __future__ import annotations

import re

import pytest

from api.codes import FIELD_CODES, PROBLEM_CODES
from svc.ids import new_secret
from tests.conftest import Api


async def test_a_problems_type_leads_to_the_row_of_its_code(api: Api) -> None:
    status, body = await api.call("GET", "/v1/payments/pay_nothing_here")
    assert status == 404 and isinstance(body, dict), body
    assert body["type"] == "/problems/payment_not_found"
    async with api.session.get(body["type"], allow_redirects=False) as response:
        assert response.status == 302
        assert response.headers["Location"] == "/problems#payment_not_found"
    async with api.session.get(body["type"]) as response:
        assert response.status == 200
        assert response.content_type == "text/html"
        page = await response.text()
    assert '<tr id="payment_not_found">' in page


async def test_the_problems_page_lists_every_code_once(api: Api) -> None:
    async with api.session.get("/problems") as response:
        assert response.status == 200
        assert "default-src 'none'" in response.headers["Content-Security-Policy"]
        page = await response.text()
    rows = re.findall(r'<tr id="([a-z_]+)">', page)
    assert rows == [*PROBLEM_CODES, *FIELD_CODES]


async def test_an_unknown_problem_type_is_not_found(api: Api) -> None:
    async with api.session.get("/problems/no_such_code", allow_redirects=False) as response:
        assert response.status == 404


@pytest.mark.parametrize(
    ("sent", "said"),
    [
        ("whsec_" + "a" * 32, "This is a webhook endpoint's signing secret, not an API key."),
        ("trmsec_" + "b" * 32, "This is a terminal's device secret, not an API key."),
        ("sk_test_4eC39HqLyjWDarjtT1zdp7dc", "This is not an API key."),
        ("svc_test_short", "This is not an API key."),
    ],
)
async def test_a_credential_of_the_wrong_shape_is_told_what_a_key_looks_like(
    api: Api, sent: str, said: str
) -> None:
    status, body = await api.call(
        "GET", "/v1/payments", headers={"Authorization": f"Bearer {sent}"}
    )
    assert status == 401 and isinstance(body, dict), body
    assert body["code"] == "invalid_api_key"
    detail = body["detail"]
    assert detail.startswith(said), detail
    assert "svc_test_" in detail and "svc_live_" in detail and "32" in detail
    assert sent not in detail


async def test_a_key_of_the_right_shape_that_is_unknown_is_only_not_valid(api: Api) -> None:
    unknown = new_secret("svc_test_")
    status, body = await api.call(
        "GET", "/v1/payments", headers={"Authorization": f"Bearer {unknown}"}
    )
    assert status == 401 and isinstance(body, dict), body
    assert body["code"] == "invalid_api_key"
    assert body["detail"] == "The API key is not valid: unknown, revoked, rolled or expired."


async def test_a_real_key_has_the_shape_the_answer_describes(api: Api) -> None:
    """The shape the 401 describes is that of the keys the service makes."""
    assert re.fullmatch(r"svc_(test|live)_[A-Za-z0-9_-]{32}", api.key), api.key
