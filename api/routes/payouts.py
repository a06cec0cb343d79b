"""Payout routes: pay out now (test environment), read and list payouts.

Shapes (the payout object is ``svc.money.model.records.Payout.public``):

- ``POST /v1/payouts`` — test environment only (a live key gets 409 ``sandbox_only``; live
  balances are paid out on ``SVC_PAYOUT_SCHEDULE``); header ``Idempotency-Key`` required;
  form ``amount`` (optional, default all that is available) and ``currency`` (``CHF``).
  201 with the payout, ``status`` ``paid``, and ``payout.paid``; 422 naming ``amount``
  (``insufficient_funds``) when nothing or less is available.
- ``GET /v1/payouts`` — newest first, paged. ``GET /v1/payouts/{payout_id}``.
"""

from __future__ import annotations

from aiohttp import web

from api.input.fields import check, list_body, page_params
from api.input.money import optional_amount, optional_form, sandbox_only
from api.input.payments import currency
from api.lookups import named
from api.middleware.auth import scope_of
from api.middleware.idempotency import idempotent
from api.openapi import (
    OPAQUE_CURSOR,
    created,
    form_body,
    ok,
    page_query,
    path_id,
)
from api.problems import FieldError
from api.routing import Routes
from svc.context import Context
from svc.db import Unit
from svc.http import CONTEXT, json_response
from svc.money.flow import payouts

routes = Routes("Balance and payouts", path_id("payout_id", "po", "payout"))


@routes.post(
    "/v1/payouts",
    "payouts:write",
    {
        "operationId": "create_payout",
        "summary": "Test environment: pay out the available balance now",
        "requestBody": form_body("PayoutCreate"),
        "responses": created(
            "Payout",
            "Paid; payout.paid is emitted. A live key gets 409 sandbox_only (live "
            "balances follow the payout schedule); 422 insufficient_funds names "
            "amount when less is available.",
            "/v1/payouts/{id}.",
        ),
    },
    "415",
    key_required=True,
)
async def create_payout(request: web.Request) -> web.Response:
    """Pay out the available balance now (test environment; 201)."""
    sandbox_only(request, "Paying out on request")
    errors: list[FieldError] = []
    values = await optional_form(request, {"amount", "currency"}, errors)
    value = optional_amount(values, errors)
    money = currency(values, errors)
    check(errors)
    ctx: Context = request.app[CONTEXT]

    async def pay(unit: Unit) -> web.Response:
        payout = await payouts.pay_out(ctx, unit, scope_of(request), money, value)
        headers = {"Location": f"/v1/payouts/{payout.id}"}
        return json_response(payout.public(), status=201, headers=headers)

    return await idempotent(request, pay)


@routes.get(
    "/v1/payouts",
    "payouts:read",
    {
        "operationId": "list_payouts",
        "summary": "List payouts",
        "parameters": page_query(OPAQUE_CURSOR),
        "responses": ok("PayoutList", "A page of payouts."),
    },
    "422",
)
async def list_payouts(request: web.Request) -> web.Response:
    limit, cursor = page_params(request)
    found, next_cursor = await request.app[CONTEXT].payouts.listing(
        scope_of(request), limit, cursor
    )
    return json_response(list_body([p.public() for p in found], next_cursor))


@routes.get(
    "/v1/payouts/{payout_id}",
    "payouts:read",
    {
        "operationId": "read_payout",
        "summary": "Read a payout",
        "responses": ok("Payout", "The payout."),
    },
)
async def read_payout(request: web.Request) -> web.Response:
    stored, scope = request.app[CONTEXT].payouts, scope_of(request)
    payout = await named(
        request,
        "payout_id",
        "po",
        lambda payout_id: stored.get(scope, payout_id),
        "payout_not_found",
        "No payout {} in this scope.",
    )
    return json_response(payout.public())
