"""Balance routes: what an organisation has, and the ledger movements that make it up.

Shapes:

- ``GET /v1/balance`` — 200 ``{"object": "balance", "environment", "available": [{"amount",
  "currency"}], "pending": [{"amount", "currency"}]}``, one item per currency (CHF always).
  ``available`` can be paid out; ``pending`` becomes available once ``SVC_SETTLEMENT_DELAY``
  has passed since the payment. Both are sums of the movements below.
- ``GET /v1/balance_transactions`` — the movements, newest first, paged; query
  ``source_id`` (optional) keeps those of one payment, refund, chargeback or payout.
"""

from __future__ import annotations

import re

from aiohttp import web

from api.input.fields import list_body, page_params
from api.middleware.auth import scope_of
from api.openapi import (
    OPAQUE_CURSOR,
    Json,
    ok,
    page_query,
)
from api.problems import FieldError, InvalidInput
from api.routing import Routes
from svc.db.times import now_ms
from svc.http import CONTEXT, json_response
from svc.payments import CURRENCIES

SOURCE_ID = re.compile(r"(pay|re|cb|po)_[0-9a-v]{26}")

routes = Routes("Balance and payouts")
_SOURCE: Json = {
    "name": "source_id",
    "in": "query",
    "required": False,
    "description": "Only the movements of this payment, refund, chargeback or payout.",
    "schema": {"type": "string", "pattern": "^(pay|re|cb|po)_[0-9a-v]{26}$"},
}


@routes.get(
    "/v1/balance",
    "balance:read",
    {
        "operationId": "read_balance",
        "summary": "The balance: available and pending, per currency",
        "responses": ok("Balance", "The balance."),
    },
)
async def read_balance(request: web.Request) -> web.Response:
    scope = scope_of(request)
    held = await request.app[CONTEXT].ledger.balances(scope, CURRENCIES, now_ms())
    body = {
        "object": "balance",
        "environment": scope.env,
        "available": [{"amount": b.available, "currency": b.currency} for b in held],
        "pending": [{"amount": b.pending, "currency": b.currency} for b in held],
    }
    return json_response(body)


@routes.get(
    "/v1/balance_transactions",
    "balance:read",
    {
        "operationId": "list_balance_transactions",
        "summary": "List the ledger movements that make up the balance",
        "parameters": [*page_query(OPAQUE_CURSOR), _SOURCE],
        "responses": ok("BalanceTransactionList", "A page of movements."),
    },
    "422",
)
async def list_balance_transactions(request: web.Request) -> web.Response:
    limit, cursor = page_params(request)
    source_id = request.query.get("source_id")
    if source_id is not None and not SOURCE_ID.fullmatch(source_id):
        detail = "The id of a payment, refund, chargeback or payout (pay_, re_, cb_, po_)."
        raise InvalidInput([FieldError("source_id", "invalid_id", detail)])
    now = now_ms()
    found, next_cursor = await request.app[CONTEXT].ledger.transactions(
        scope_of(request), limit, cursor, source_id
    )
    return json_response(list_body([t.public(now) for t in found], next_cursor))
