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
    query, args = _ordered(select, args, cursor)
    rows = await q.fetch(f"{query} ${len(args) + 1}", *args, limit + 1)
    return _paged(rows, limit, build)


async def page_of_any(
    q: Queries,
    select: str,
    args: list[Any],
    column: str,
    values: Sequence[str],
    limit: int,
    cursor: str | None,
    build: Callable[[Any], T],
) -> tuple[list[T], str | None]:
    """``page`` of the rows of ``select`` whose ``column`` is any of ``values``.

    PostgreSQL reads an index ordered by (…, column, created_at, id) in order only under an
    equality on ``column``; under ``= ANY`` it reads every matching row and sorts them, which
    grows with the table. So each value gets its own ordered index range of at most one page
    (a LATERAL subquery per value), and the pages are merged.
    """
    args = [*args, list(values)]
    of_values = len(args)
    inner, args = _ordered(f"{select} AND {column} = one.value", args, cursor)
    limited = len(args) + 1
    query = (
        f"SELECT page.* FROM unnest(${of_values}::text[]) AS one(value) "
        f"CROSS JOIN LATERAL ({inner} ${limited}) AS page "
        f"ORDER BY page.created_at DESC, page.id DESC LIMIT ${limited}"
    )
    rows = await q.fetch(query, *args, limit + 1)
    return _paged(rows, limit, build)


def _ordered(select: str, args: list[Any], cursor: str | None) -> tuple[str, list[Any]]:
    """``select`` after the cursor's position, newest first, up to ``LIMIT`` (its value is
    the parameter after ``args``)."""
    query = select
    if cursor is not None:
        ms, last_id = cursors.decode(cursor)
        query += f" AND (created_at, id) < (${len(args) + 1}, ${len(args) + 2})"
        args = [*args, to_dt(ms), last_id]
    return query + " ORDER BY created_at DESC, id DESC LIMIT", args


def _paged(
    rows: Sequence[Any], limit: int, build: Callable[[Any], T]
) -> tuple[list[T], str | None]:
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
