"""Developer → API keys: list the scope's keys, make one, roll a key's secret (either secret
shown this once) and revoke a key. The same kernel use cases and input checks as
``/v1/api_keys``, bounded alike by the permissions of the key the session signed in with, read
afresh on each action (sessions start from full-access keys): a key with more is a 403 page."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web

from api.dashboard.lookups import key_gone, scoped_key
from api.dashboard.rendering import (
    PAGE_SIZE,
    SESSION,
    errors_by_field,
    form_text,
    redirect,
    render,
)
from api.input.api_keys import expire_previous_in, new_key
from api.input.fields import form_fields
from api.input.numbers import number_in
from api.middleware.auth import scope_of
from api.problems import InvalidInput, Problem
from svc.context import Context
from svc.http import CONTEXT
from svc.keys import flow
from svc.keys.errors import PermissionsExceeded
from svc.keys.model import PERMISSIONS, ApiKey, Permissions

routes = web.RouteTableDef()

LIST = "/dashboard/api_keys"
ROLL_CHOICES = (
    ("0", "now"),
    ("3600", "in 1 hour"),
    ("86400", "in 24 hours"),
    ("259200", "in 3 days"),
    ("604800", "in 7 days"),
)
"""The roll form's choices: seconds the current secret keeps working (the field's value)."""
DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _now_ms() -> int:
    return int(time.time() * 1000)


@asynccontextmanager
async def _bounded(request: web.Request) -> AsyncIterator[Permissions]:
    """The permissions of the session's key, as stored now; an action on a key with more is
    refused with a 403 page naming what the session's key lacks."""
    session = request[SESSION]
    own = await request.app[CONTEXT].api_keys.get(session.key_id, session.scope)
    if own is None:  # the guard found it a moment ago; nothing is granted without it
        raise Problem(403, "permission_denied", "This session's API key is gone.")
    try:
        yield own.permissions
    except PermissionsExceeded as exc:
        detail = (
            f"This session's API key lacks the permission {exc.permission}: it may only make, "
            "roll or revoke keys with no more permissions than its own."
        )
        raise Problem(403, "permission_denied", detail) from None


@routes.get("/api_keys", allow_head=False)
async def list_keys(request: web.Request) -> web.Response:
    cursor = request.query.get("cursor") or None
    ctx: Context = request.app[CONTEXT]
    found, next_cursor = await ctx.api_keys.page(scope_of(request), PAGE_SIZE, cursor)
    return render(
        request,
        "api_keys.html",
        section="developer",
        keys=found,
        now_ms=_now_ms(),
        next_cursor=next_cursor,
        paged=cursor is not None,
    )


def _form(
    request: web.Request, status: int = 200, errors: dict[str, str] | None = None, **values: object
) -> web.Response:
    fields = {"name": "", "access": "full", "permissions": [], "expires_at": "", **values}
    return render(
        request,
        "api_key_new.html",
        status=status,
        section="developer",
        permissions=PERMISSIONS,
        errors=errors or {},
        form=fields,
    )


@routes.get("/api_keys/new", allow_head=False)
async def key_form(request: web.Request) -> web.Response:
    return _form(request)


def _access_error(access: str, chosen: list[str]) -> str | None:
    """What the form's two ways of giving access say that the API's body cannot: a choice
    made carelessly would otherwise make a full-access key, or a key that can do nothing."""
    if access == "full" and chosen:
        return "Full access gives every permission: uncheck them, or choose restricted."
    if access not in ("full", "restricted"):
        return "Choose full access or restricted."
    if access == "restricted" and not chosen:
        return "Choose at least one permission, or full access."
    return None


def _expires_at(value: object) -> object:
    """The date field (``2027-01-31``) as the API's ``expires_at``: that day's start in UTC."""
    if value == "":
        return None
    return f"{value}T00:00:00Z" if isinstance(value, str) and DATE.fullmatch(value) else value


@routes.post("/api_keys")
async def create_key(request: web.Request) -> web.Response:
    """Make the key and show its secret, this once (the page is never cached)."""
    fields = await form_fields(request)
    access = form_text(fields.get("access"))
    chosen = [v for v in fields.getall("permissions", []) if isinstance(v, str)]
    # The API's creation body, field for field, so that both refuse and accept alike.
    body: dict[str, Any] = {
        "name": fields.get("name"),
        "permissions": None if access == "full" else chosen,
        "expires_at": _expires_at(fields.get("expires_at")),
    }
    shown = {
        "name": form_text(body["name"]),
        "access": access,
        "permissions": chosen,
        "expires_at": form_text(fields.get("expires_at")),
    }
    refusal = _access_error(access, chosen)
    errors = {} if refusal is None else {"permissions": refusal}
    try:
        new = new_key(body)
    except InvalidInput as refused:
        return _form(request, 422, {**errors, **errors_by_field(refused)}, **shown)
    if errors:
        return _form(request, 422, errors, **shown)
    ctx: Context = request.app[CONTEXT]
    async with _bounded(request) as granted, ctx.unit() as unit:
        secret, key = await flow.create(
            unit, scope_of(request), new.name, new.permissions, new.expires_ms, granted
        )
    return render(
        request, "api_key_created.html", status=201, section="developer", key=key, secret=secret
    )


def _roll_form(
    request: web.Request, key: ApiKey, status: int = 200, error: str = "", chosen: str = ""
) -> web.Response:
    return render(
        request,
        "api_key_roll.html",
        status=status,
        section="developer",
        key=key,
        choices=ROLL_CHOICES,
        chosen=chosen,
        error=error,
    )


@routes.get("/api_keys/{key_id}/roll", allow_head=False)
async def roll_form(request: web.Request) -> web.Response:
    key = await scoped_key(request)
    if key.revoked_ms is not None:
        return redirect(f"{LIST}?notice=roll_revoked")
    return _roll_form(request, key)


def _seconds(value: str) -> object:
    """The field as the API's JSON would carry it: digits as a number, anything else as is."""
    seconds = number_in(value, 0, 999_999_999)
    return value if seconds is None else seconds


@routes.post("/api_keys/{key_id}/roll")
async def roll_key(request: web.Request) -> web.Response:
    """A new secret, shown on this page only; the current one keeps working as chosen."""
    key = await scoped_key(request)
    value = form_text((await form_fields(request)).get("expire_previous_in"))
    if not value:
        return _roll_form(request, key, 422, "Choose when the current secret stops working.")
    try:
        seconds = expire_previous_in({"expire_previous_in": _seconds(value)})
    except InvalidInput as refused:
        return _roll_form(request, key, 422, refused.errors[0].detail, value)
    ctx: Context = request.app[CONTEXT]
    async with _bounded(request) as granted, ctx.unit() as unit:
        rolled = await flow.roll(
            unit, ctx.api_keys, ctx.key_changes, key.id, seconds, scope_of(request), granted
        )
    if rolled is None:
        return redirect(f"{LIST}?notice=roll_revoked")
    secret, updated = rolled
    return render(request, "api_key_rolled.html", section="developer", key=updated, secret=secret)


@routes.get("/api_keys/{key_id}/revoke", allow_head=False)
async def confirm_revoke(request: web.Request) -> web.Response:
    key = await scoped_key(request)
    return render(request, "api_key_revoke.html", section="developer", key=key)


@routes.post("/api_keys/{key_id}/revoke")
async def revoke_key(request: web.Request) -> web.Response:
    """Revoke the key on every API process; revoking this session's own key ends the session
    on the next page."""
    key = await scoped_key(request)
    ctx: Context = request.app[CONTEXT]
    async with _bounded(request) as granted, ctx.unit() as unit:
        revoked = await flow.revoke(
            unit, ctx.api_keys, ctx.key_changes, key.id, scope_of(request), granted
        )
    if revoked is None:
        raise key_gone()
    return redirect(f"{LIST}?notice=key_revoked")
