"""Reading payment forms (``application/x-www-form-urlencoded``) into checked values."""

from __future__ import annotations

from collections import Counter

from aiohttp import web

from api.input.fields import form_fields
from api.input.numbers import whole_number
from api.problems import FieldError, Problem
from svc.payments import CURRENCIES

FORM = "application/x-www-form-urlencoded"
MAX_AMOUNT = 99_999_999  # CHF 999,999.99
AMOUNT_UNIT = " Rappen (2450 is CHF 24.50)"
_TRUE = ("true", "1")
_FALSE = ("false", "0")


async def form(request: web.Request, allowed: set[str], errors: list[FieldError]) -> dict[str, str]:
    """The form fields, each at most once; other content types are a 415 Problem."""
    if request.content_type != FORM:
        raise Problem(415, "unsupported_media_type", f"Send the body as {FORM}.")
    fields = await form_fields(request)
    # Counted over items(): iterating the form (or its keys) names a repeated field once.
    counts = Counter(name for name, _ in fields.items())
    values: dict[str, str] = {}
    for name, count in counts.items():
        if count > 1:
            errors.append(FieldError(name, "duplicate_field", f"'{name}' is sent more than once."))
        value = fields[name]  # the first; read on so that a required field is not also missing
        if name not in allowed:
            detail = f"'{name}' is not a field of this request."
            errors.append(FieldError(name, "unknown_field", detail))
        elif not isinstance(value, str):
            errors.append(FieldError(name, "invalid_type", "Send text, not a file."))
        else:
            values[name] = value
    return values


def amount(values: dict[str, str], errors: list[FieldError]) -> int:
    """``amount``: a whole number of Rappen from 1 to MAX_AMOUNT; decimals are refused."""
    return whole_number(values.get("amount"), "amount", 1, MAX_AMOUNT, errors, AMOUNT_UNIT)


def currency(values: dict[str, str], errors: list[FieldError]) -> str:
    """``currency``: ``CHF`` (the default)."""
    value = values.get("currency", "CHF")
    if value not in CURRENCIES:
        errors.append(
            FieldError(
                "currency",
                "unsupported_currency",
                f"Supported currencies: {', '.join(CURRENCIES)}.",
            )
        )
    return value


def boolean(values: dict[str, str], name: str, errors: list[FieldError]) -> bool:
    """A form boolean: ``true``/``false`` (or ``1``/``0``); absent is false."""
    raw = values.get(name, "false").lower()
    if raw in _TRUE:
        return True
    if raw not in _FALSE:
        errors.append(FieldError(name, "invalid_boolean", "Send true or false."))
    return False
