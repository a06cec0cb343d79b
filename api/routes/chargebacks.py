"""Chargeback routes: raise one in the sandbox, read and list them.

Shapes (the chargeback object is ``svc.money.model.records.Chargeback.public``):

- ``POST /v1/sandbox/payments/{payment_id}/chargeback`` — test environment only (a live key
  gets 409 ``sandbox_only``); form ``reason`` (optional, default ``fraudulent``). 201 with the
  chargeback: ``amount`` (what is left of the payment after refunds) and ``fee`` are debited
  at once, and ``chargeback.created`` is emitted. 404 ``payment_not_found``; 409
  ``payment_not_succeeded``, ``already_charged_back`` or ``payment_fully_refunded``.
- ``GET /v1/chargebacks`` — newest first, paged. ``GET /v1/chargebacks/{chargeback_id}``.
"""

from __future__ import annotations

from aiohttp import web

from api.input.fields import check, list_body, page_params
from api.input.money import optional_form, sandbox_only
from api.lookups import named, scoped_payment
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
from svc.money.flow import chargebacks
from svc.money.model.records import CHARGEBACK_REASONS

DEFAULT_REASON = "fraudulent"

routes = Routes(
    "Refunds and chargebacks",
    path_id("payment_id", "pay", "payment"),
    path_id("chargeback_id", "cb", "chargeback"),
)


@routes.post(
    "/v1/sandbox/payments/{payment_id}/chargeback",
    "chargebacks:write",
    {
        "operationId": "create_sandbox_chargeback",
        "summary": "Test environment: raise a chargeback of a succeeded payment",
        "requestBody": form_body("ChargebackCreate"),
        "responses": created(
            "Chargeback",
            "Debited; chargeback.created is emitted. 409: a live key "
            "(sandbox_only), a payment not succeeded (payment_not_succeeded), "
            "charged back already (already_charged_back) or refunded in full "
            "(payment_fully_refunded).",
            "/v1/chargebacks/{id} of the new chargeback.",
        ),
    },
    "415",
)
async def raise_chargeback(request: web.Request) -> web.Response:
    """Play a chargeback of a succeeded test payment (201)."""
    sandbox_only(request, "Raising a chargeback")
    errors: list[FieldError] = []
    values = await optional_form(request, {"reason"}, errors)
    reason = values.get("reason", DEFAULT_REASON)
    if reason not in CHARGEBACK_REASONS:
        detail = f"One of {', '.join(CHARGEBACK_REASONS)}."
        errors.append(FieldError("reason", "invalid_choice", detail))
    check(errors)
    payment = await scoped_payment(request)
    ctx: Context = request.app[CONTEXT]

    async def receive(unit: Unit) -> web.Response:
        chargeback = await chargebacks.receive(ctx, unit, scope_of(request), payment.id, reason)
        headers = {"Location": f"/v1/chargebacks/{chargeback.id}"}
        return json_response(chargeback.public(), status=201, headers=headers)

    return await idempotent(request, receive)


@routes.get(
    "/v1/chargebacks",
    "chargebacks:read",
    {
        "operationId": "list_chargebacks",
        "summary": "List chargebacks",
        "parameters": page_query(OPAQUE_CURSOR),
        "responses": ok("ChargebackList", "A page of chargebacks."),
    },
    "422",
)
async def list_chargebacks(request: web.Request) -> web.Response:
    limit, cursor = page_params(request)
    found, next_cursor = await request.app[CONTEXT].chargebacks.listing(
        scope_of(request), limit, cursor
    )
    return json_response(list_body([c.public() for c in found], next_cursor))


@routes.get(
    "/v1/chargebacks/{chargeback_id}",
    "chargebacks:read",
    {
        "operationId": "read_chargeback",
        "summary": "Read a chargeback",
        "responses": ok("Chargeback", "The chargeback."),
    },
)
async def read_chargeback(request: web.Request) -> web.Response:
    stored, scope = request.app[CONTEXT].chargebacks, scope_of(request)
    chargeback = await named(
        request,
        "chargeback_id",
        "cb",
        lambda chargeback_id: stored.get(scope, chargeback_id),
        "chargeback_not_found",
        "No chargeback {} in this scope.",
    )
    return json_response(chargeback.public())
