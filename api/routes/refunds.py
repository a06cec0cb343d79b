"""Refund routes: refund a succeeded payment, read a refund, list the scope's or a payment's
refunds.

Shapes (the refund object is ``svc.money.model.records.Refund.public``):

- ``POST /v1/payments/{payment_id}/refunds`` — header ``Idempotency-Key`` required; form
  ``amount`` (integer Rappen, optional: default all that is left to refund). 201 with the
  refund, ``status`` ``pending``; it is settled (``succeeded`` or ``failed`` with
  ``failure_code``) right after, with ``refund.succeeded`` or ``refund.failed``. 404
  ``payment_not_found``; 409 ``payment_not_succeeded``; 422 naming ``amount``
  (``exceeds_refundable`` past the captured amount less earlier refunds).
- ``GET /v1/refunds`` — the scope's refunds newest first, paged; query ``payment_id``,
  ``status``, ``created[gte]``, ``created[lt]`` filter.
- ``GET /v1/refunds/{refund_id}`` — 200 with the refund; 404 ``refund_not_found``.
- ``GET /v1/payments/{payment_id}/refunds`` — the payment's refunds, newest first, paged.
"""

from __future__ import annotations

from aiohttp import web

from api.input.fields import check, list_body, page_params
from api.input.listing import choice, created_range, object_id, page_of
from api.input.money import optional_amount, optional_form
from api.lookups import named, scoped_payment
from api.middleware.auth import scope_of
from api.middleware.idempotency import idempotent
from api.openapi import (
    ID_TAIL,
    OPAQUE_CURSOR,
    Json,
    created,
    created_query,
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
from svc.money.flow import refunds
from svc.money.model.records import REFUND_STATUSES
from svc.money.store.refunds import RefundFilters

routes = Routes(
    "Refunds and chargebacks",
    path_id("payment_id", "pay", "payment"),
    path_id("refund_id", "re", "refund"),
)
_FILTERS: list[Json] = [
    {
        "name": "payment_id",
        "in": "query",
        "required": False,
        "description": "Only the refunds of this payment.",
        "schema": {"type": "string", "pattern": f"^pay_{ID_TAIL}$"},
    },
    {
        "name": "status",
        "in": "query",
        "required": False,
        "description": "Only refunds with this status.",
        "schema": {"type": "string", "enum": list(REFUND_STATUSES)},
    },
    *created_query(),
]


@routes.post(
    "/v1/payments/{payment_id}/refunds",
    "refunds:write",
    {
        "operationId": "create_refund",
        "summary": "Refund all or part of a succeeded payment",
        "requestBody": form_body("RefundCreate"),
        "responses": created(
            "Refund",
            "Created pending; settled right after (refund.succeeded or refund.failed). 409 "
            "payment_not_succeeded: only succeeded payments are refunded.",
            "/v1/refunds/{id} of the new refund.",
        ),
    },
    "415",
    key_required=True,
)
async def create_refund(request: web.Request) -> web.Response:
    """Refund all or part of a succeeded payment (201, ``pending``)."""
    errors: list[FieldError] = []
    values = await optional_form(request, {"amount"}, errors)
    value = optional_amount(values, errors)
    check(errors)
    payment = await scoped_payment(request)
    ctx: Context = request.app[CONTEXT]

    async def create(unit: Unit) -> web.Response:
        refund = await refunds.create(ctx, unit, scope_of(request), payment.id, value)
        headers = {"Location": f"/v1/refunds/{refund.id}"}
        return json_response(refund.public(), status=201, headers=headers)

    return await idempotent(request, create)


@routes.get(
    "/v1/refunds",
    "refunds:read",
    {
        "operationId": "list_refunds",
        "summary": "List the refunds of the key's scope, newest first",
        "parameters": [*page_query(OPAQUE_CURSOR), *_FILTERS],
        "responses": ok("RefundList", "A page of refunds."),
    },
    "422",
)
async def list_scope_refunds(request: web.Request) -> web.Response:
    """The scope's refunds newest first, filtered by the query."""
    errors: list[FieldError] = []
    payment_id = object_id(request, "payment_id", "pay", errors)
    status = choice(request, "status", REFUND_STATUSES, errors)
    since, until = created_range(request, errors)
    check(errors)
    listing = page_of(request, "re")
    filters = RefundFilters(payment_id, status, since, until)
    found, next_cursor = await request.app[CONTEXT].refunds.listed(
        scope_of(request), filters, listing.limit, listing.cursor
    )
    return json_response(list_body([r.public() for r in found], next_cursor))


@routes.get(
    "/v1/refunds/{refund_id}",
    "refunds:read",
    {
        "operationId": "read_refund",
        "summary": "Read a refund",
        "responses": ok("Refund", "The refund."),
    },
)
async def read_refund(request: web.Request) -> web.Response:
    stored, scope = request.app[CONTEXT].refunds, scope_of(request)
    refund = await named(
        request,
        "refund_id",
        "re",
        lambda refund_id: stored.get(scope, refund_id),
        "refund_not_found",
        "No refund {} in this scope.",
    )
    return json_response(refund.public())


@routes.get(
    "/v1/payments/{payment_id}/refunds",
    "refunds:read",
    {
        "operationId": "list_payment_refunds",
        "summary": "List a payment's refunds",
        "parameters": page_query(OPAQUE_CURSOR),
        "responses": ok("RefundList", "A page of refunds."),
    },
    "422",
)
async def list_refunds(request: web.Request) -> web.Response:
    limit, cursor = page_params(request)
    payment = await scoped_payment(request)
    found, next_cursor = await request.app[CONTEXT].refunds.of_payment(payment.id, limit, cursor)
    return json_response(list_body([r.public() for r in found], next_cursor))
