"""Kernel errors reach clients as Problems through one table (api.middleware.errors.KERNEL)."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import make_mocked_request

from api.codes import PROBLEM_CODES
from api.middleware.errors import KERNEL, kernel_problem
from svc.errors import (
    InvalidCursor,
    KeyReused,
    RequestInProgress,
    ServiceError,
    TerminalUnavailable,
    Unavailable,
)
from svc.keys.errors import PermissionsExceeded
from svc.money import errors as money
from svc.orgs.errors import NameTaken
from svc.webhooks.errors import EndpointDisabled, TooManyEndpoints

CASES: list[tuple[ServiceError, int, str, str]] = [
    (Unavailable("postgres"), 503, "service_unavailable", "retry shortly"),
    (InvalidCursor(), 422, "validation_error", "Unknown cursor"),
    (KeyReused(), 422, "idempotency_key_reused", "other parameters"),
    (RequestInProgress(), 409, "idempotency_request_in_progress", "changed while it was read"),
    (TerminalUnavailable("offline"), 409, "terminal_offline", "Terminal trm_x is offline"),
    (TerminalUnavailable("busy"), 409, "terminal_busy", "Terminal trm_x is working"),
    (TerminalUnavailable("not_found"), 404, "terminal_not_found", "No terminal trm_x"),
    (money.UnknownPayment(), 404, "payment_not_found", "No such payment"),
    (money.NotSucceeded("pending"), 409, "payment_not_succeeded", "The payment is pending"),
    (money.ExceedsRefundable(300), 422, "validation_error", "At most 300 Rappen"),
    (money.AlreadyChargedBack(), 409, "already_charged_back", "chargeback already"),
    (money.NothingToDispute(), 409, "payment_fully_refunded", "refunded in full"),
    (money.InsufficientFunds(120), 422, "validation_error", "120 Rappen are available"),
    (NameTaken(), 409, "organisation_name_taken", "choose another name"),
    (EndpointDisabled("we_x"), 409, "endpoint_disabled", "turn it on first"),
    (TooManyEndpoints(50), 422, "too_many_endpoints", "This scope has 50 webhook endpoints"),
    (PermissionsExceeded("payments:write"), 403, "permission_denied", "payments:write: a key"),
]


@pytest.mark.parametrize(("error", "status", "code", "detail"), CASES)
def test_each_kernel_error_has_its_problem(
    error: ServiceError, status: int, code: str, detail: str
) -> None:
    request = make_mocked_request("POST", "/v1/terminals/trm_x/payments", match_info={})
    request.match_info["terminal_id"] = "trm_x"
    problem = kernel_problem(request, error)
    assert (problem.status, problem.code) == (status, code)
    assert any(detail in text for text in [problem.detail, *(e.detail for e in problem.errors)])
    assert code in PROBLEM_CODES


def test_an_error_the_table_does_not_name_is_a_500() -> None:
    problem = kernel_problem(make_mocked_request("GET", "/v1/x"), money.MoneyError())
    assert (problem.status, problem.code) == (500, "internal_error")
    assert money.MoneyError not in KERNEL
