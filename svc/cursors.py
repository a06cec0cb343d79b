"""Opaque, store-independent pagination cursors: a position (time, id) in a newest-first list.

Clients pass back what they were given; the text is base64url and means nothing to them.
The id may be any id ``svc.ids.is_opaque_id`` accepts (a foreign producer's event id too);
cursors made when ids were only ``[A-Za-z0-9_-]{1,64}`` have the same form and still decode.
"""

from __future__ import annotations

import base64
import binascii
import re

from svc.errors import InvalidCursor
from svc.ids import MAX_ID_LENGTH, is_opaque_id

_POSITION = re.compile(r"([0-9]{1,15}):(.+)", re.DOTALL)
# base64url, unpadded, of "<15 digits>:<id>" with each id character up to 4 bytes of UTF-8.
MAX_LENGTH = -(-(15 + 1 + 4 * MAX_ID_LENGTH) * 4 // 3)


def encode(ms: int, row_id: str) -> str:
    return base64.urlsafe_b64encode(f"{ms}:{row_id}".encode()).decode().rstrip("=")


def decode(cursor: str) -> tuple[int, str]:
    """``(ms, id)`` of a cursor; raises InvalidCursor for anything this module did not make."""
    if not 1 <= len(cursor) <= MAX_LENGTH or not cursor.isascii():
        raise InvalidCursor(cursor)
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, ValueError):
        raise InvalidCursor(cursor) from None
    match = _POSITION.fullmatch(text)
    if match is None or not is_opaque_id(match.group(2)):
        raise InvalidCursor(cursor)
    if encode(int(match.group(1)), match.group(2)) != cursor:
        raise InvalidCursor(cursor)
    return int(match.group(1)), match.group(2)
