"""Query parameters of a delivery log search: ``outcome``, ``status_code`` (a code or a class
such as ``5xx``), ``event_type``, ``event_id`` and the ``created`` range, each a 422 naming it
when it is not one the log can hold."""

from __future__ import annotations

import re

from aiohttp import web

from api.input.fields import check, unknown_event_type
from api.input.listing import CREATED_GTE, CREATED_LT, choice, created_range
from api.problems import FieldError
from svc.envelope import EVENT_TYPES
from svc.events.model import LOGGED_OUTCOMES, LogFilter
from svc.ids import MAX_ID_LENGTH

SEARCHED = ("outcome", "status_code", "event_type", "event_id", CREATED_GTE, CREATED_LT)
"""The query parameters of a search."""
_EVENT_ID = re.compile(rf"[^/\x00-\x1f\x7f-\x9f]{{1,{MAX_ID_LENGTH}}}")
"""What the description's event id allows (an id of no event matches nothing)."""
_CODE = re.compile(r"([1-5])([0-9]{2}|xx)", re.IGNORECASE)


def log_filter(request: web.Request) -> LogFilter:
    """The search the query asks for; ``InvalidInput`` naming each parameter that is wrong."""
    errors: list[FieldError] = []
    outcome = choice(request, "outcome", LOGGED_OUTCOMES, errors)
    code, klass = _status_code(request.query.get("status_code"), errors)
    event_type = request.query.get("event_type")
    if event_type is not None and event_type not in EVENT_TYPES:
        errors.append(unknown_event_type("event_type", event_type))
    event_id = request.query.get("event_id")
    if event_id is not None and not _EVENT_ID.fullmatch(event_id):
        detail = f"An event id: 1 to {MAX_ID_LENGTH} characters, no '/' or control character."
        errors.append(FieldError("event_id", "invalid_id", detail))
    since, until = created_range(request, errors)
    check(errors)
    return LogFilter(outcome, code, klass, event_type, event_id, since, until)


def _status_code(raw: str | None, errors: list[FieldError]) -> tuple[int | None, int | None]:
    """``(code, None)`` for a code such as ``503``, ``(None, 5)`` for a class such as ``5xx``."""
    if raw is None:
        return None, None
    match = _CODE.fullmatch(raw)
    if match is None:
        detail = "A response code from 100 to 599 (503) or a class of them (5xx)."
        errors.append(FieldError("status_code", "invalid_status_code", detail))
        return None, None
    if match.group(2).lower() == "xx":
        return None, int(match.group(1))
    return int(raw), None
