"""Whole numbers written as text (form fields, query parameters), read the one way every
route reads them.

A number is an optional minus and ASCII digits (``\\d`` and ``str.isdigit`` would admit other
scripts' digits and superscripts, which ``int`` and ``float`` then refuse or misread). Text
longer than ``MAX_TEXT`` is told apart with string methods before any pattern sees it, and
the patterns have no two repeats that can match the same characters, so no input makes a
match backtrack: every reading is linear in the text.
"""

from __future__ import annotations

import re

from api.problems import FieldError

MAX_TEXT = 32
"""Characters of a number's text that patterns read; a longer run of digits is out of range
whatever it holds (leading zeros too), longer other text is not a number."""
_WHOLE = re.compile(r"-?[0-9]+")
_DECIMAL = re.compile(r"-?[0-9]*[.,][0-9]*")
_BEYOND: int = 10**MAX_TEXT
"""Stands for the value of a run of digits too long to read: outside every range."""


def whole_number(
    raw: str | None, field: str, low: int, high: int, errors: list[FieldError], unit: str = ""
) -> int:
    """The whole number ``raw`` from ``low`` to ``high``; otherwise ``low``, with the error
    recorded for ``field``: ``required`` (absent or empty), ``not_integer`` (decimals),
    ``invalid_integer`` (not a number) or ``out_of_range`` (negative or huge ones too)."""
    span = f"{field} is a whole number from {low:,} to {high:,}{unit}"
    if not raw:
        errors.append(FieldError(field, "required", f"Send {field}: {span}."))
        return low
    value = _whole(raw)
    if value is None:
        code = "not_integer" if _decimal(raw) else "invalid_integer"
        errors.append(FieldError(field, code, f"{span}, in ASCII digits."))
    elif not low <= value <= high:
        errors.append(FieldError(field, "out_of_range", f"{span}."))
    else:
        return value
    return low


def number_in(raw: str, low: int, high: int) -> int | None:
    """The whole number ``raw`` when it is one from ``low`` to ``high``, else None (for a
    parameter that may also be written another way)."""
    value = _whole(raw)
    return value if value is not None and low <= value <= high else None


def _whole(raw: str) -> int | None:
    """``raw`` as a number when it is an optional minus and ASCII digits, else None."""
    if len(raw) > MAX_TEXT:
        digits = raw.removeprefix("-")
        if not (digits.isascii() and digits.isdigit()):
            return None
        return -_BEYOND if raw.startswith("-") else _BEYOND
    return int(raw) if _WHOLE.fullmatch(raw) else None


def _decimal(raw: str) -> bool:
    """Whether ``raw`` is a number with decimals (``24.50``, ``24,50``)."""
    return len(raw) <= MAX_TEXT and _DECIMAL.fullmatch(raw) is not None
