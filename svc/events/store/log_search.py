"""A search of the delivery log (``LogFilter``): its SQL conditions over the log's rows, and
the cursors of its pages, bound to the search they came from so that one search's cursor
cannot page another."""

from __future__ import annotations

import hashlib
from typing import Any

from svc import cursors
from svc.db.times import opt_dt
from svc.errors import InvalidCursor
from svc.events.model import LogFilter


def conditions(search: LogFilter) -> list[tuple[str, Any]]:
    """The SQL conditions of ``search`` over the log's alias ``a``, for ``narrowed``."""
    return [
        ("a.outcome = {}", search.outcome),
        ("a.status_code / 100 = {}", search.status_class),
        # The class condition as well, so that the class index serves an exact code too.
        ("a.status_code / 100 = {} / 100", search.status_code),
        ("a.status_code = {}", search.status_code),
        ("a.event_type = {}", search.event_type),
        ("a.event_id = {}", search.event_id),
        ("a.attempted_at >= {}", opt_dt(search.since_ms)),
        ("a.attempted_at < {}", opt_dt(search.until_ms)),
    ]


def log_cursor(ms: int, attempt_id: str, search: LogFilter) -> str:
    """The cursor of the position ``(ms, attempt_id)`` in the list ``search`` keeps."""
    if search.empty:
        return cursors.encode(ms, attempt_id)
    return cursors.encode(ms, f"{_digest(search)}.{attempt_id}")


def unbind(cursor: str, search: LogFilter) -> tuple[int, str]:
    """The position of a cursor ``log_cursor`` made for ``search``; ``InvalidCursor`` for one of
    another search."""
    ms, position = cursors.decode(cursor)
    digest, _, attempt_id = position.rpartition(".")
    if digest != ("" if search.empty else _digest(search)):
        raise InvalidCursor(cursor)
    return ms, attempt_id


def _digest(search: LogFilter) -> str:
    return hashlib.blake2s(search.key().encode(), digest_size=6).hexdigest()
