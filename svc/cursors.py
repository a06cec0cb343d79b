"""Opaque, store-independent pagination cursors: a position (time, id) in a newest-first list.

Clients pass back what they were given; the text is base64url and means nothing to them.
"""

from __future__ import annotations

import base64
import binascii
import re

from svc.errors import InvalidCursor

_POSITION = re.compile(r"([0-9]{1,15}):([A-Za-z0-9_-]{1,64})")


def encode(ms: int, row_id: str) -> str:
    return base64.urlsafe_b64encode(f"{ms}:{row_id}".encode()).decode().rstrip("=")


def decode(cursor: str) -> tuple[int, str]:
    """``(ms, id)`` of a cursor; raises InvalidCursor for anything this module did not make."""
    if not 1 <= len(cursor) <= 120:
        raise InvalidCursor(cursor)
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, ValueError):
        raise InvalidCursor(cursor) from None
    match = _POSITION.fullmatch(text)
    if match is None or encode(int(match.group(1)), match.group(2)) != cursor:
        raise InvalidCursor(cursor)
    return int(match.group(1)), match.group(2)
