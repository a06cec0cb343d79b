"""Query parameters of the filtered lists: choices, event types, ids, ``created`` ranges and
cursors, as 422 Problems naming the parameter."""

from __future__ import annotations

import re
from dataclasses import dataclass

from aiohttp import web

from api.input.fields import LATEST_MS, instant_ms, page_params, unknown_event_type
from api.input.numbers import number_in
from api.problems import FieldError, InvalidInput
from svc import cursors
from svc.envelope import EVENT_TYPES
from svc.errors import InvalidCursor

CREATED_GTE = "created[gte]"
CREATED_LT = "created[lt]"
MAX_UNIX_SECONDS = 10**12 - 1  # later ones are the last time there is
ID_TAIL = "[0-9a-v]{26}"


@dataclass(frozen=True, slots=True)
class Page:
    """``limit`` and ``cursor`` of a list, the cursor checked to be one of this list's."""

    limit: int
    cursor: str | None


def page_of(request: web.Request, id_prefix: str | None = None) -> Page:
    """``limit`` and ``cursor``; a cursor this service did not hand out, or one from a list of
    other objects (its position names an id without ``id_prefix``), is ``invalid_cursor``."""
    limit, cursor = page_params(request)
    if cursor is not None:
        try:
            _, last_id = cursors.decode(cursor)
        except InvalidCursor:
            last_id = ""
        if not last_id or (id_prefix is not None and not last_id.startswith(id_prefix + "_")):
            detail = "Pass back next_cursor of the previous page of this list, as it was given."
            raise InvalidInput([FieldError("cursor", "invalid_cursor", detail)])
    return Page(limit, cursor)


def created_range(request: web.Request, errors: list[FieldError]) -> tuple[int | None, int | None]:
    """``created[gte]`` and ``created[lt]`` in milliseconds (None when not given): ISO 8601
    times with an offset or unix seconds; ``created[lt]`` must come after ``created[gte]``."""
    since = _instant(request, CREATED_GTE, errors)
    until = _instant(request, CREATED_LT, errors)
    if since is not None and until is not None and until <= since:
        detail = f"{CREATED_LT} must be later than {CREATED_GTE}."
        errors.append(FieldError(CREATED_LT, "invalid_range", detail))
    return since, until


def _instant(request: web.Request, name: str, errors: list[FieldError]) -> int | None:
    raw = request.query.get(name)
    if raw is None:
        return None
    seconds = number_in(raw, 0, MAX_UNIX_SECONDS)
    if seconds is not None:
        return min(seconds * 1000, LATEST_MS)
    ms = instant_ms(raw)
    if ms is None:
        detail = "An ISO 8601 time with its offset (2026-11-21T08:00:00Z) or unix seconds."
        errors.append(FieldError(name, "invalid_time", detail))
    return ms


def choice(
    request: web.Request, name: str, choices: tuple[str, ...], errors: list[FieldError]
) -> str | None:
    """The query parameter ``name``, one of ``choices``, or None when not given."""
    raw = request.query.get(name)
    if raw is not None and raw not in choices:
        errors.append(FieldError(name, "invalid_choice", f"One of {', '.join(choices)}."))
        return None
    return raw


def object_id(request: web.Request, name: str, prefix: str, errors: list[FieldError]) -> str | None:
    """The query parameter ``name``, an id of the form ``<prefix>_…``, or None when not given."""
    raw = request.query.get(name)
    if raw is not None and not re.fullmatch(f"{prefix}_{ID_TAIL}", raw):
        errors.append(FieldError(name, "invalid_id", f"An id of the form {prefix}_…."))
        return None
    return raw


def event_types(request: web.Request, errors: list[FieldError]) -> list[str]:
    """``type``, repeated (``?type=a&type=b``) or comma separated (``?type=a,b``): each an
    event type; none given keeps every type."""
    names = [name for raw in request.query.getall("type", []) for name in raw.split(",")]
    for name in names:
        if name not in EVENT_TYPES:
            errors.append(unknown_event_type("type", name))
    return list(dict.fromkeys(names))
