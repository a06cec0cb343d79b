"""The checkout page a customer opens from ``checkout_url`` (an HTML page, not part of ``/v1``).

- ``GET {checkout path}/{payment_id}/{token}`` — 200 ``text/html``: amount and status; for an
  open test-environment payment, three buttons: pay, decline, cancel.
- ``POST {checkout path}/{payment_id}/{token}`` — form ``action`` = ``pay`` (→ authorized →
  succeeded), ``decline`` (→ failed, ``card_declined``) or ``cancel`` (→ canceled,
  ``customer_canceled``); then 303 to the payment's ``success_url``. A payment that is
  already final just redirects. Live payments have no sandbox buttons: 409 ``sandbox_only``.
  Other fields, or ``action`` twice, are a 422 naming them.

The checkout path is the path of ``SVC_CHECKOUT_BASE_URL`` (``/checkout`` by default); the
checkout host forwards it to the API.
"""

from __future__ import annotations

import html
import secrets
from urllib.parse import urlsplit

from aiohttp import web

from api.input.fields import check
from api.input.payments import form
from api.openapi import ID_TAIL, problem, problems
from api.problems import FieldError, NotFound, Problem
from api.routing import Routes
from svc.context import Context
from svc.http import CONTEXT
from svc.ids import has_prefix
from svc.payments import Payment, flow

ACTIONS = ("pay", "decline", "cancel")
PATH = "/checkout/{payment_id}/{token}"
"""The route under the default checkout path; the app serves it under the path of
``SVC_CHECKOUT_BASE_URL`` (``checkout_path``)."""
_PATTERNS = {"payment_id": "pay_[0-9a-z]{26}", "token": "[A-Za-z0-9_-]{1,64}"}

routes = Routes(
    "Checkout",
    {
        "name": "payment_id",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "pattern": f"^pay_{ID_TAIL}$"},
    },
    {
        "name": "token",
        "in": "path",
        "required": True,
        "description": "The secret part of checkout_url.",
        "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
    },
)
_NOT_FOUND = problem("No such checkout link (checkout_not_found, route_not_found).")
_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Checkout</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}}
button{{font-size:1rem;padding:.6rem 1.2rem;margin:.2rem}}.sandbox{{color:#a15c00}}</style>
</head><body>
<h1>{amount}</h1>
<p>Payment <code>{payment_id}</code> is <strong id="status">{status}</strong>.</p>
{body}
</body></html>
"""
_BUTTONS = """<p class="sandbox">Sandbox: choose what the customer does.</p>
<form method="post">
<button name="action" value="pay">Pay</button>
<button name="action" value="decline">Decline</button>
<button name="action" value="cancel">Cancel</button>
</form>"""


def checkout_path(ctx: Context) -> str:
    return urlsplit(ctx.settings.checkout_base_url).path.rstrip("/")


async def _payment(request: web.Request) -> Payment:
    payment_id = request.match_info["payment_id"]
    token = request.match_info["token"]
    payment = None
    if has_prefix(payment_id, "pay"):
        payment = await request.app[CONTEXT].payments.get(payment_id)
    if (
        payment is None
        or payment.checkout_token is None
        or not secrets.compare_digest(payment.checkout_token, token)
    ):
        raise NotFound("checkout_not_found", "This checkout link is not valid.")
    return payment


def _francs(payment: Payment) -> str:
    return f"{payment.currency} {payment.amount // 100}.{payment.amount % 100:02d}"


@routes.get(
    PATH,
    None,
    {
        "operationId": "show_checkout",
        "summary": "The checkout page of an online or phone payment",
        "security": [],
        "responses": {
            "200": {
                "description": "The page; sandbox payments have pay, decline, cancel.",
                "content": {"text/html": {"schema": {"type": "string"}}},
            },
            "404": _NOT_FOUND,
            **problems("500"),
        },
    },
)
async def show(request: web.Request) -> web.Response:
    payment = await _payment(request)
    if payment.final:
        body = f'<p><a href="{html.escape(payment.success_url or "")}">Back to the shop</a></p>'
    elif payment.env == "test":
        body = _BUTTONS
    else:
        body = "<p>Card payments are not available on this installation.</p>"
    page = _PAGE.format(
        amount=html.escape(_francs(payment)),
        payment_id=html.escape(payment.id),
        status=html.escape(payment.status),
        body=body,
    )
    return web.Response(text=page, content_type="text/html")


@routes.post(
    PATH,
    None,
    {
        "operationId": "act_on_checkout",
        "summary": "Sandbox only: pay, decline or cancel, then return to success_url",
        "security": [],
        "requestBody": {
            "required": True,
            "content": {
                "application/x-www-form-urlencoded": {
                    "schema": {"$ref": "#/components/schemas/CheckoutAction"}
                }
            },
        },
        "responses": {
            "303": {
                "description": "Done (or the payment was final already): go back.",
                "headers": {
                    "Location": {
                        "required": True,
                        "description": "The payment's success_url.",
                        "schema": {"type": "string"},
                    }
                },
            },
            "404": _NOT_FOUND,
            "409": problem("A live payment has no sandbox actions (sandbox_only)."),
            **problems("400", "413", "415", "422", "500"),
        },
    },
)
async def act(request: web.Request) -> web.Response:
    payment = await _payment(request)
    ctx: Context = request.app[CONTEXT]
    if payment.env != "test":
        raise Problem(409, "sandbox_only", "Only test-environment payments have sandbox actions.")
    errors: list[FieldError] = []
    action = (await form(request, {"action"}, errors)).get("action")
    if action not in ACTIONS:
        code = "required" if action is None else "invalid_choice"
        errors.append(FieldError("action", code, "pay, decline or cancel."))
    check(errors)
    if not payment.final:
        if action == "pay":
            await flow.complete(ctx, payment.id)
        elif action == "decline":
            await flow.move(ctx, payment.id, "failed", {"failure_code": "card_declined"})
        else:
            await flow.move(ctx, payment.id, "canceled", {"cancel_reason": "customer_canceled"})
    return web.Response(status=303, headers={"Location": payment.success_url or "/"})


def mounted(ctx: Context) -> list[web.RouteDef]:
    """The declared routes under the checkout path of ``ctx``, their parameters matched."""
    path = checkout_path(ctx) + PATH.removeprefix("/checkout")
    for name, pattern in _PATTERNS.items():
        path = path.replace("{" + name + "}", "{" + name + ":" + pattern + "}")
    return [
        web.RouteDef(route.method, path, route.handler, route.definition().kwargs)
        for route in routes.declared
    ]
