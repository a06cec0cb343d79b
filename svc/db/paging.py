"""A scope's rows newest first, a page at a time, with the API's opaque cursors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from svc import cursors
from svc.db.database import Queries
from svc.db.times import to_dt
from svc.orgs import Scope


class Dated(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def created_ms(self) -> int: ...


T = TypeVar("T", bound=Dated)


async def newest_first(
    q: Queries,
    select: str,
    scope: Scope,
    limit: int,
    cursor: str | None,
    build: Callable[[Any], T],
) -> tuple[list[T], str | None]:
    """Up to ``limit`` objects of ``select`` (``SELECT … FROM t``, a table with ``org_id``,
    ``env``, ``created_at`` and ``id``) in ``scope``, newest first, from after ``cursor``; and
    the cursor of the next page (None on the last page)."""
    query = f"{select} WHERE org_id = $1 AND env = $2"
    args: list[Any] = [scope.org, scope.env]
    if cursor is not None:
        ms, last_id = cursors.decode(cursor)
        query += " AND (created_at, id) < ($3, $4)"
        args += [to_dt(ms), last_id]
    query += f" ORDER BY created_at DESC, id DESC LIMIT ${len(args) + 1}"
    rows = await q.fetch(query, *args, limit + 1)
    found = [build(row) for row in rows[:limit]]
    if len(rows) <= limit or not found:
        return found, None
    return found, cursors.encode(found[-1].created_ms, found[-1].id)
