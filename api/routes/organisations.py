"""Partner routes: create and list connected organisations, and the partner's earnings.

Each needs a partner's key (``svc keys create --partner``); any other key gets 403
``partner_only``. Shapes:

- ``POST /v1/organisations`` — JSON ``{"name"}`` (1–200 characters, unique). 201 with the
  organisation (``id`` ``org_…``, ``object``, ``name``, ``partner_id``, ``created_at``) and
  ``api_keys`` ``{"test": "svc_test_…", "live": "svc_live_…"}``, shown this once. 409
  ``organisation_name_taken`` naming ``name``.
- ``GET /v1/organisations`` — the partner's organisations, newest first, paged (no keys).
- ``GET /v1/partner/earnings`` — commissions of the key's environment summed by month (UTC)
  and organisation: rows ``{"organisation_id", "month": "2026-11", "currency", "amount"}``,
  newest month first, paged.

With ``Svc-Organisation: org_…`` (see ``api.middleware.auth``) any other ``/v1`` route acts
for one of the partner's organisations.
"""

from __future__ import annotations

from aiohttp import web

from api.input.fields import check, json_object, list_body, page_params, reject_unknown
from api.input.money import require_partner
from api.middleware.auth import scope_of
from api.middleware.idempotency import idempotent
from api.openapi import (
    OPAQUE_CURSOR,
    json_content,
    ok,
    page_query,
    problem,
    ref,
)
from api.problems import FieldError
from api.routing import Routes
from svc.context import Context
from svc.db import Unit
from svc.db.times import now_ms
from svc.http import CONTEXT, json_response
from svc.orgs import flow

MAX_NAME = 200

routes = Routes("Partners")
PARTNER_ONLY = problem("The key's organisation is not a partner (partner_only).")


def _name(value: object, errors: list[FieldError]) -> str:
    if value is None:
        errors.append(FieldError("name", "required", "Name the organisation."))
    elif not isinstance(value, str):
        errors.append(FieldError("name", "invalid_type", "The name is a string."))
    elif not value.strip() or not value.isprintable():
        errors.append(FieldError("name", "invalid", "A name has printable characters."))
    elif len(value) > MAX_NAME:
        errors.append(FieldError("name", "too_long", f"At most {MAX_NAME} characters."))
    else:
        return value
    return ""


@routes.post(
    "/v1/organisations",
    "organisations:write",
    {
        "operationId": "create_organisation",
        "summary": "Partners: create a connected organisation with its API keys",
        "requestBody": {
            "required": True,
            "content": json_content(ref("OrganisationCreate")),
        },
        "responses": {
            **ok("OrganisationCreated", "Created; api_keys shown only here.", "201"),
            "403": PARTNER_ONLY,
        },
    },
    "415",
)
async def create_organisation(request: web.Request) -> web.Response:
    """Create a connected organisation with a test and a live key (201)."""
    partner = await require_partner(request)
    body = await json_object(request)
    errors: list[FieldError] = []
    reject_unknown(body, {"name"}, errors)
    name = _name(body.get("name"), errors)
    check(errors)

    async def create(unit: Unit) -> web.Response:
        org, keys = await flow.connect(unit, request.app[CONTEXT].orgs, partner, name, now_ms())
        return json_response({**org.public(), "api_keys": keys}, status=201)

    return await idempotent(request, create)


@routes.get(
    "/v1/organisations",
    "organisations:read",
    {
        "operationId": "list_organisations",
        "summary": "Partners: list connected organisations",
        "parameters": page_query(OPAQUE_CURSOR),
        "responses": {
            **ok("OrganisationList", "A page of organisations."),
            "403": PARTNER_ONLY,
        },
    },
    "422",
)
async def list_organisations(request: web.Request) -> web.Response:
    partner = await require_partner(request)
    limit, cursor = page_params(request)
    ctx: Context = request.app[CONTEXT]
    found, next_cursor = await ctx.orgs.connected(partner, limit, cursor)
    return json_response(list_body([o.public() for o in found], next_cursor))


@routes.get(
    "/v1/partner/earnings",
    "organisations:read",
    {
        "operationId": "list_partner_earnings",
        "summary": "Partners: commissions by month and organisation",
        "parameters": page_query(OPAQUE_CURSOR),
        "responses": {
            **ok("EarningList", "A page of earnings."),
            "403": PARTNER_ONLY,
        },
    },
    "422",
)
async def list_earnings(request: web.Request) -> web.Response:
    await require_partner(request)
    limit, cursor = page_params(request)
    ctx: Context = request.app[CONTEXT]
    rows, next_cursor = await ctx.orgs.earnings(scope_of(request), limit, cursor)
    return json_response(list_body([row.public() for row in rows], next_cursor))
