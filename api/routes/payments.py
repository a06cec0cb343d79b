"""Payment routes: create an online or phone payment, read it (with long poll), cancel it.

Shapes (every response body is the payment object of ``svc.payments.Payment.public``):

- ``POST /v1/payments`` — form ``amount`` (integer Rappen, required), ``currency`` (``CHF``,
  default), ``channel`` (``online`` default, or ``phone``), ``success_url`` (required);
  header ``Idempotency-Key`` required. 201 with the payment, ``status`` ``pending`` and
  ``checkout_url``.
- ``GET /v1/payments`` — the scope's payments newest first, paged (``limit``, ``cursor``);
  query ``status``, ``channel``, ``terminal_id``, ``created[gte]``, ``created[lt]`` filter.
- ``GET /v1/payments/{payment_id}`` — query ``wait`` (integer 0–30, optional): hold until
  the payment is final or ``wait`` seconds pass. 200 with the payment.
- ``POST /v1/payments/{payment_id}/cancel`` — no body. 200 with the canceled payment (also
  when it was canceled before); 409 ``payment_not_cancelable`` when it succeeded or failed.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from api.hub import HUB
from api.input.fields import check, http_url, list_body
from api.input.listing import choice, created_range, object_id, page_of
from api.input.numbers import whole_number
from api.input.payments import amount, currency, form
from api.lookups import scoped_payment
from api.middleware.auth import scope_of
from api.middleware.deadline import extend
from api.middleware.idempotency import idempotent
from api.openapi import (
    ID_TAIL,
    OPAQUE_CURSOR,
    Json,
    created_payment,
    created_query,
    ok,
    page_query,
    path_id,
    ref,
)
from api.problems import FieldError, Problem
from api.routing import Routes
from svc.context import Context
from svc.db import Unit
from svc.http import CONTEXT, json_response
from svc.payments import CHANNELS, STATUSES, Payment, flow
from svc.payments.store import PaymentFilters
from svc.pubsub.wakeups import payment_topic

MAX_WAIT = 30
ONLINE_CHANNELS = ("online", "phone")

routes = Routes("Payments", path_id("payment_id", "pay", "payment"))


def _filter(name: str, schema: Json) -> Json:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": f"Only payments with this {name}.",
        "schema": schema,
    }


_WAIT: Json = {
    "name": "wait",
    "in": "query",
    "required": False,
    "description": (
        "Long poll: hold up to this many seconds until the payment is final, then answer."
    ),
    "schema": {"type": "integer", "minimum": 0, "maximum": MAX_WAIT, "default": 0},
}
_FILTERS: list[Json] = [
    _filter("status", {"type": "string", "enum": list(STATUSES)}),
    _filter("channel", {"type": "string", "enum": list(CHANNELS)}),
    _filter("terminal_id", {"type": "string", "pattern": f"^trm_{ID_TAIL}$"}),
    *created_query(),
]


def respond(ctx: Context, payment: Payment, status: int = 200) -> web.Response:
    headers = {"Location": f"/v1/payments/{payment.id}"} if status == 201 else None
    return json_response(
        payment.public(ctx.settings.checkout_base_url), status=status, headers=headers
    )


@routes.post(
    "/v1/payments",
    "payments:write",
    {
        "operationId": "create_payment",
        "summary": "Create an online or phone payment",
        "requestBody": {
            "required": True,
            "content": {"application/x-www-form-urlencoded": {"schema": ref("PaymentCreate")}},
        },
        "responses": created_payment("Created: a pending payment with its checkout_url."),
    },
    "415",
    key_required=True,
)
async def create_payment(request: web.Request) -> web.Response:
    """Create a pending online or phone payment with a checkout page (201)."""
    errors: list[FieldError] = []
    values = await form(request, {"amount", "currency", "channel", "success_url"}, errors)
    value = amount(values, errors)
    money = currency(values, errors)
    channel = values.get("channel", "online")
    if channel not in ONLINE_CHANNELS:
        detail = "online or phone; start terminal payments with POST /v1/terminals/{id}/payments."
        errors.append(FieldError("channel", "unsupported_channel", detail))
    success_url = http_url(values.get("success_url"), "success_url", errors)
    check(errors)
    ctx: Context = request.app[CONTEXT]

    async def create(unit: Unit) -> web.Response:
        payment = await flow.create_online(
            ctx, unit, scope_of(request), value, money, channel, success_url
        )
        return respond(ctx, payment, 201)

    return await idempotent(request, create)


@routes.get(
    "/v1/payments",
    "payments:read",
    {
        "operationId": "list_payments",
        "summary": "List the payments of the key's scope, newest first",
        "parameters": [*page_query(OPAQUE_CURSOR), *_FILTERS],
        "responses": ok("PaymentList", "A page of payments."),
    },
    "422",
)
async def list_payments(request: web.Request) -> web.Response:
    """The scope's payments newest first, filtered by the query."""
    errors: list[FieldError] = []
    status = choice(request, "status", STATUSES, errors)
    channel = choice(request, "channel", CHANNELS, errors)
    terminal_id = object_id(request, "terminal_id", "trm", errors)
    since, until = created_range(request, errors)
    check(errors)
    listing = page_of(request, "pay")
    ctx: Context = request.app[CONTEXT]
    filters = PaymentFilters(status, channel, terminal_id, since, until)
    found, next_cursor = await ctx.payments.page(
        scope_of(request), listing.limit, listing.cursor, filters
    )
    base = ctx.settings.checkout_base_url
    return json_response(list_body([p.public(base) for p in found], next_cursor))


def wait_param(request: web.Request) -> int:
    """``wait``: whole seconds from 0 to MAX_WAIT (0 when not given)."""
    raw = request.query.get("wait")
    if raw is None:
        return 0
    errors: list[FieldError] = []
    seconds = whole_number(raw, "wait", 0, MAX_WAIT, errors, " seconds")
    check(errors)
    return seconds


@routes.get(
    "/v1/payments/{payment_id}",
    "payments:read",
    {
        "operationId": "read_payment",
        "summary": "Read a payment; with wait, a long poll for its final state",
        "parameters": [_WAIT],
        "responses": ok("Payment", "The payment (still open when wait ran out)."),
    },
    "404",
    "422",
)
async def read_payment(request: web.Request) -> web.Response:
    """The payment; with ``wait=N`` a long poll that answers once it is final (or after N s)."""
    wait = wait_param(request)
    payment = await scoped_payment(request)
    ctx: Context = request.app[CONTEXT]
    if wait and not payment.final:
        extend(request, wait)
        payment = await wait_final(request, payment, wait)
    return respond(ctx, payment)


async def wait_final(request: web.Request, payment: Payment, wait: float) -> Payment:
    """Hold until a status signal shows ``payment`` final, or ``wait`` seconds pass."""
    ctx: Context = request.app[CONTEXT]
    gauge = ctx.metrics.long_polls
    gauge.inc()
    try:
        with request.app[HUB].listen(payment_topic(payment.id)) as listener:
            # Read again after registering: a change in between would otherwise be missed.
            payment = await ctx.payments.get(payment.id) or payment
            try:
                async with asyncio.timeout(wait):
                    while not payment.final:
                        kind = (await listener.get()).payload.get("kind")
                        if kind == "shutdown":
                            break
                        if kind != "progress":
                            payment = await ctx.payments.get(payment.id) or payment
            except TimeoutError:
                pass
    finally:
        gauge.dec()
    return payment


@routes.post(
    "/v1/payments/{payment_id}/cancel",
    "payments:write",
    {
        "operationId": "cancel_payment",
        "summary": "Cancel a payment that is not final",
        "responses": ok("Payment", "The canceled payment (also when canceled before)."),
    },
    "404",
)
async def cancel_payment(request: web.Request) -> web.Response:
    """Abort a payment that is not final (200); a terminal payment also stops on its terminal."""
    payment = await scoped_payment(request)
    ctx: Context = request.app[CONTEXT]

    async def cancel(unit: Unit) -> web.Response:
        changes = {"cancel_reason": "requested"}
        moved = await flow.move(ctx, payment.id, "canceled", changes, unit=unit)
        current = payment if moved is None else moved.payment
        if current.status != "canceled":  # canceling a canceled payment changes nothing: 200
            raise Problem(
                409,
                "payment_not_cancelable",
                f"The payment is already {current.status}; only open payments can be canceled.",
            )
        return respond(ctx, current)

    return await idempotent(request, cancel)
