"""Input and errors of the money routes: optional form bodies, amounts, partner-only routes,
and the Problem answering each refusal of ``svc.money``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from aiohttp import web

from api.input.payments import amount, form
from api.middleware.auth import scope_of
from api.problems import FieldError, InvalidInput, NotFound, Problem
from svc.http import CONTEXT
from svc.money import errors as refused
from svc.money import partners


async def optional_form(
    request: web.Request, allowed: set[str], errors: list[FieldError]
) -> dict[str, str]:
    """The form fields, or none when the request has no body."""
    if not request.body_exists:
        return {}
    return await form(request, allowed, errors)


def optional_amount(values: dict[str, str], errors: list[FieldError]) -> int | None:
    """``amount`` in Rappen when sent (1 to 99,999,999), else None."""
    return amount(values, errors) if "amount" in values else None


async def require_partner(request: web.Request) -> str:
    """The key's organisation, which must be a partner (403 ``partner_only`` otherwise)."""
    org = scope_of(request).org
    if not await partners.is_partner(request.app[CONTEXT].db, org):
        raise Problem(403, "partner_only", "Only a partner organisation's keys can do this.")
    return org


def sandbox_only(request: web.Request, what: str) -> None:
    if scope_of(request).env != "test":
        raise Problem(409, "sandbox_only", f"{what} exists only in the test environment.")


def _amount_error(code: str, detail: str) -> InvalidInput:
    return InvalidInput([FieldError("amount", code, detail)])


def problem_of(exc: refused.MoneyError) -> Problem:
    """The Problem answering a refusal of the money rules."""
    if isinstance(exc, refused.UnknownPayment):
        return NotFound("payment_not_found", "No such payment in this scope.")
    if isinstance(exc, refused.NotSucceeded):
        detail = f"The payment is {exc.status}; only succeeded payments can be refunded."
        return Problem(409, "payment_not_succeeded", detail)
    if isinstance(exc, refused.ExceedsRefundable):
        detail = f"At most {exc.remaining} Rappen of this payment can still be refunded."
        return _amount_error("exceeds_refundable", detail)
    if isinstance(exc, refused.AlreadyChargedBack):
        return Problem(409, "already_charged_back", "This payment has its chargeback already.")
    if isinstance(exc, refused.NothingToDispute):
        detail = "The payment was refunded in full; nothing is left to charge back."
        return Problem(409, "payment_fully_refunded", detail)
    if isinstance(exc, refused.InsufficientFunds):
        detail = f"{exc.available} Rappen are available for a payout."
        return _amount_error("insufficient_funds", detail)
    if isinstance(exc, refused.NameTaken):
        detail = "An organisation of this name exists; choose another name."
        return Problem(
            409, "organisation_name_taken", detail, [FieldError("name", "taken", detail)]
        )
    return Problem(500, "internal_error", "The server failed to handle the request.")


@contextmanager
def refusals() -> Iterator[None]:
    """Answer the money rules' refusals inside the block as Problems."""
    try:
        yield
    except refused.MoneyError as exc:
        raise problem_of(exc) from None
