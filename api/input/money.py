"""Input of the money routes: optional form bodies, amounts, partner-only and sandbox-only
routes."""

from __future__ import annotations

from aiohttp import web

from api.input.payments import amount, form
from api.middleware.auth import scope_of
from api.problems import FieldError, Problem
from svc.http import CONTEXT


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
    if not await request.app[CONTEXT].orgs.is_partner(org):
        raise Problem(403, "partner_only", "Only a partner organisation's keys can do this.")
    return org


def sandbox_only(request: web.Request, what: str) -> None:
    if scope_of(request).env != "test":
        raise Problem(409, "sandbox_only", f"{what} exists only in the test environment.")
