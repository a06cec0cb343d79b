"""Keyset pages of newest-first lists, with the opaque cursors of ``svc.cursors``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from svc import cursors
from svc.db.database import Queries
from svc.db.times import to_dt, to_ms

T = TypeVar("T")


async def page(
    q: Queries,
    select: str,
    args: list[Any],
    limit: int,
    cursor: str | None,
    build: Callable[[Any], T],
) -> tuple[list[T], str | None]:
    """Rows of ``select`` (a query ending in its WHERE clause, over a table with
    ``created_at`` and ``id``) newest first, and the cursor of the next page."""
    query = select
    if cursor is not None:
        ms, last_id = cursors.decode(cursor)
        query += f" AND (created_at, id) < (${len(args) + 1}, ${len(args) + 2})"
        args = [*args, to_dt(ms), last_id]
    query += f" ORDER BY created_at DESC, id DESC LIMIT ${len(args) + 1}"
    rows = await q.fetch(query, *args, limit + 1)
    items = [build(row) for row in rows[:limit]]
    if len(rows) <= limit:
        return items, None
    last = rows[limit - 1]
    return items, cursors.encode(to_ms(last["created_at"]), last["id"])


def narrowed(
    select: str, args: list[Any], conditions: Sequence[tuple[str, Any]]
) -> tuple[str, list[Any]]:
    """``select`` with ``AND <condition>`` for each ``(condition, value)`` whose value is not
    None; ``{}`` in a condition stands for the value's parameter."""
    args = list(args)
    for condition, value in conditions:
        if value is not None:
            args.append(value)
            select += " AND " + condition.format(f"${len(args)}")
    return select, args
