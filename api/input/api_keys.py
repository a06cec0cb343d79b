"""Input of the API key routes: a new key's name, permissions and expiry, and a roll's
``expire_previous_in``."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from api.input.fields import check, instant_ms, json_int, optional_text, reject_unknown
from api.problems import FieldError
from svc.keys.errors import InvalidPermission
from svc.keys.model import (
    MAX_EXPIRE_PREVIOUS,
    MAX_NAME,
    RESOURCES,
    Permissions,
    parse_permissions,
)


@dataclass(frozen=True, slots=True)
class NewKey:
    name: str
    permissions: Permissions
    expires_ms: int | None


def new_key(body: dict[str, Any]) -> NewKey:
    """``name`` (at most 100 characters), ``permissions`` (a list of ``resource:read|write``
    items, or null/absent for full access) and ``expires_at`` (ISO 8601 with an offset, in the
    future, or null/absent: never)."""
    errors: list[FieldError] = []
    reject_unknown(body, {"name", "permissions", "expires_at"}, errors)
    name = optional_text(body.get("name"), "name", MAX_NAME, errors)
    wanted = _permissions(body.get("permissions"), errors)
    expires = _expires_at(body.get("expires_at"), errors)
    check(errors)
    return NewKey(name, wanted, expires)


def expire_previous_in(body: dict[str, Any]) -> int:
    """Seconds a rolled key's previous secret keeps working (0 to 604,800; default 0)."""
    errors: list[FieldError] = []
    reject_unknown(body, {"expire_previous_in"}, errors)
    seconds = 0
    if body.get("expire_previous_in") is not None:
        value = body["expire_previous_in"]
        seconds = json_int(value, "expire_previous_in", 0, MAX_EXPIRE_PREVIOUS, errors)
    check(errors)
    return seconds


def _permissions(value: Any, errors: list[FieldError]) -> Permissions:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        errors.append(FieldError("permissions", "invalid_type", "A list of strings, or null."))
        return None
    try:
        return parse_permissions(value)
    except InvalidPermission as exc:
        detail = (
            f"{exc.permission!r} is not RESOURCE:read or RESOURCE:write with RESOURCE one of "
            f"{', '.join(RESOURCES)}."
        )
        errors.append(FieldError("permissions", "invalid_permission", detail))
        return None


def _expires_at(value: Any, errors: list[FieldError]) -> int | None:
    if value is None:
        return None
    ms = instant_ms(value) if isinstance(value, str) else None
    if ms is None:
        detail = "An ISO 8601 time with its offset, such as 2027-01-31T00:00:00Z."
        errors.append(FieldError("expires_at", "invalid_time", detail))
    elif ms <= time.time() * 1000:
        errors.append(FieldError("expires_at", "in_the_past", "Must be in the future."))
    return ms
