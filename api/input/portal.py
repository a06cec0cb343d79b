"""Input of ``POST /v1/portal_sessions``: the frame origin and the platform's branding."""

from __future__ import annotations

from typing import Any

from api.input.fields import check, optional_text, reject_unknown
from api.problems import FieldError
from svc.portal.model import ACCENT, MAX_NAME, MAX_ORIGIN, Branding, frame_origin

FIELDS = {"frame_origin", "name", "accent_color"}


def _origin(value: Any, errors: list[FieldError]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        errors.append(FieldError("frame_origin", "invalid_type", "Must be a string."))
        return None
    origin = frame_origin(value) if len(value) <= MAX_ORIGIN else None
    if origin is None:
        detail = (
            "An origin is scheme://host[:port] with nothing after it: https, or http on "
            "127.0.0.1 or localhost for development."
        )
        errors.append(FieldError("frame_origin", "invalid_origin", detail))
    return origin


def _accent(value: Any, errors: list[FieldError]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not ACCENT.fullmatch(value):
        errors.append(FieldError("accent_color", "invalid", "A colour as #rrggbb."))
        return None
    return value.lower()


def new_portal_session(body: dict[str, Any]) -> tuple[str | None, Branding]:
    """The frame origin (None: no page may frame the portal) and the branding of a new link."""
    errors: list[FieldError] = []
    reject_unknown(body, FIELDS, errors)
    origin = _origin(body.get("frame_origin"), errors)
    name = optional_text(body.get("name"), "name", MAX_NAME, errors)
    if name and not name.isprintable():
        errors.append(FieldError("name", "invalid", "A name has printable characters."))
    accent = _accent(body.get("accent_color"), errors)
    check(errors)
    return origin, Branding(name or None, accent)
