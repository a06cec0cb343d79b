"""Terminal routes: list and read terminals, start a payment on one.

Shapes:

- ``GET /v1/terminals`` — 200 ``{"object": "list", "data": [terminal…], "has_more": false,
  "next_cursor": null}``. A test key's organisation always has its simulation terminal
  (``simulated: true``), created on first use.
- ``GET /v1/terminals/{terminal_id}`` — 200 with the terminal (``id``, ``object``, ``name``,
  ``status`` ``online``/``offline``, ``simulated``, ``environment``, ``current_payment_id``,
  ``created_at``, ``status_changed_at``); 404 ``terminal_not_found``.
- ``POST /v1/terminals/{terminal_id}/payments`` — form ``amount`` (integer Rappen, required),
  ``currency`` (``CHF``, default), ``tip_prompt`` (``true``/``false``, default false); header
  ``Idempotency-Key`` required. 201 with the payment (``channel`` ``terminal``, ``status``
  ``pending``); 404 ``terminal_not_found``, 409 ``terminal_offline``, 409 ``terminal_busy``.
"""

from __future__ import annotations

from aiohttp import web

from api.hub import HUB
from api.input.fields import check, list_body
from api.input.payments import amount, boolean, currency, form
from api.lookups import named
from api.middleware.auth import scope_of
from api.middleware.idempotency import idempotent
from api.openapi import (
    created_payment,
    ok,
    path_id,
    ref,
)
from api.problems import FieldError
from api.routes.payments import respond
from api.routing import Routes
from api.sandbox.simulators import ensure_simulator
from svc.context import Context
from svc.db import Unit
from svc.http import CONTEXT, json_response
from svc.payments import flow
from svc.terminal.model import Terminal

routes = Routes("Terminals", path_id("terminal_id", "trm", "terminal"))


NOT_FOUND = "No terminal {} in this scope."


async def _terminal(request: web.Request) -> Terminal:
    scope = scope_of(request)
    await ensure_simulator(request.app[CONTEXT], request.app[HUB], scope)
    terminals = request.app[CONTEXT].terminals
    return await named(
        request,
        "terminal_id",
        "trm",
        lambda terminal_id: terminals.get_scoped(scope, terminal_id),
        "terminal_not_found",
        NOT_FOUND,
    )


@routes.get(
    "/v1/terminals",
    "terminals:read",
    {
        "operationId": "list_terminals",
        "summary": "List terminals (a test key always sees its simulation terminal)",
        "responses": ok("TerminalList", "The terminals."),
    },
)
async def list_terminals(request: web.Request) -> web.Response:
    """Every terminal of the key's organisation and environment, oldest first."""
    scope = scope_of(request)
    await ensure_simulator(request.app[CONTEXT], request.app[HUB], scope)
    terminals = await request.app[CONTEXT].terminals.in_scope(scope)
    return json_response(list_body([t.public() for t in terminals], None))


@routes.get(
    "/v1/terminals/{terminal_id}",
    "terminals:read",
    {
        "operationId": "read_terminal",
        "summary": "Read a terminal with its online/offline state",
        "responses": ok("Terminal", "The terminal."),
    },
    "404",
)
async def read_terminal(request: web.Request) -> web.Response:
    return json_response((await _terminal(request)).public())


@routes.post(
    "/v1/terminals/{terminal_id}/payments",
    "terminals:write",
    {
        "operationId": "create_terminal_payment",
        "summary": "Start a payment on a terminal",
        "description": (
            "409 terminal_offline when the terminal is not connected, 409 "
            "terminal_busy while it works on another payment. Follow the result "
            "with GET /v1/payments/{id}?wait=N, the payment's WebSocket or webhooks."
        ),
        "requestBody": {
            "required": True,
            "content": {
                "application/x-www-form-urlencoded": {"schema": ref("TerminalPaymentCreate")}
            },
        },
        "responses": created_payment("Started: the payment (channel terminal, status pending)."),
    },
    "404",
    "415",
    key_required=True,
)
async def create_terminal_payment(request: web.Request) -> web.Response:
    """Start a payment on the terminal (201); the terminal reports its progress and result."""
    terminal = await _terminal(request)
    errors: list[FieldError] = []
    values = await form(request, {"amount", "currency", "tip_prompt"}, errors)
    value = amount(values, errors)
    money = currency(values, errors)
    tip_prompt = boolean(values, "tip_prompt", errors)
    check(errors)
    ctx: Context = request.app[CONTEXT]

    async def start(unit: Unit) -> web.Response:
        payment = await flow.create_on_terminal(
            ctx, unit, scope_of(request), terminal.id, value, money, tip_prompt
        )
        return respond(ctx, payment, 201)

    return await idempotent(request, start)
