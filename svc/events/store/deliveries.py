"""The delivery log: one row per attempt, read per event and per endpoint, newest first.

Attempts are written in batches with one ``COPY`` each (the dispatcher's group commit). The
delivery state of an event at an endpoint is derived from its latest attempt: ``succeeded``;
``failed`` with the time of the next attempt; or ``exhausted`` when the ladder gave no next
attempt. Pages are ordered by (attempt time, id) and cursors are opaque positions in it.
An endpoint's log and its scope's are searched (``LogFilter``: outcome, response code or
class, event type, event, time), one index range per endpoint, and their cursors are bound
to the search they came from (``log_search``). An event skipped at a disabled endpoint is a
row too (``skipped_disabled``), which a replay reads back (``skipped``).

An attempt belongs to an endpoint, and an endpoint to one scope: an event's attempts are read
through its scope's endpoints, since another scope's event may carry the same id (events are
identified within their scope). The log's rows carry no scope, so its writes stay as they are.
The scheduler reads it for retries the broker lost: latest attempts that failed and whose
next attempt is long overdue (``overdue``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from svc import cursors
from svc.db import Database, Queries, Unit
from svc.db.paging import narrowed
from svc.db.times import opt_ms, to_dt, to_ms
from svc.envelope import iso_ms
from svc.events.model import HOUR_MS, SKIPPED_DISABLED, Attempt, Hour, LogFilter, Overdue
from svc.events.store.log_search import conditions, log_cursor, unbind
from svc.orgs.model import Scope

COLUMNS = (
    "id",
    "event_id",
    "event_type",
    "endpoint_id",
    "attempt",
    "trigger",
    "outcome",
    "status_code",
    "error",
    "duration_ms",
    "response_body",
    "attempted_at",
    "next_attempt_at",
)
_SELECT = f"SELECT {', '.join(COLUMNS)} FROM delivery_attempts"
_OF_EVENT = """event_id = $1 AND endpoint_id IN (
    SELECT id FROM webhook_endpoints WHERE org_id = $2 AND env = $3)"""
"""An event's attempts in its scope: at the scope's endpoints (``webhook_endpoints_scope``)."""

NO_FILTER = LogFilter()

# Skipped attempts of the endpoint (delivery_attempts_endpoint_outcome) with nothing tried
# there since, in the order their events were created.
_SKIPPED = f"""
SELECT a.event_id FROM delivery_attempts a
JOIN webhook_endpoints w ON w.id = a.endpoint_id
JOIN events e ON e.id = a.event_id AND e.org_id = w.org_id AND e.env = w.env
WHERE a.endpoint_id = $1 AND a.outcome = '{SKIPPED_DISABLED}'
  AND NOT EXISTS (
      SELECT 1 FROM delivery_attempts b
      WHERE b.event_id = a.event_id AND b.endpoint_id = a.endpoint_id
        AND (b.attempted_at, b.id) > (a.attempted_at, a.id))
ORDER BY e.created_at, e.id
LIMIT $2
"""

# An overdue attempt with its scope and the time its trigger chain's first attempt was made
# (which dates the retry window); the latest attempt of its event at its endpoint
# (delivery_attempts_event), of an endpoint neither disabled nor ordered.
_OVERDUE_ATTEMPT = """
SELECT a.id, a.event_id, a.endpoint_id, a.attempt, a.trigger, a.next_attempt_at,
       w.org_id, w.env,
       (SELECT max(f.attempted_at) FROM delivery_attempts f
        WHERE f.event_id = a.event_id AND f.endpoint_id = a.endpoint_id AND f.attempt = 1
          AND f.attempted_at <= a.attempted_at) AS first_attempted_at
FROM delivery_attempts a
JOIN webhook_endpoints w ON w.id = a.endpoint_id AND NOT w.disabled AND NOT w.ordered
WHERE NOT EXISTS (
      SELECT 1 FROM delivery_attempts b
      WHERE b.event_id = a.event_id AND b.endpoint_id = a.endpoint_id
        AND (b.attempted_at, b.id) > (a.attempted_at, a.id))
"""

# The window's overdue attempts, read through delivery_attempts_next.
_OVERDUE = (
    _OVERDUE_ATTEMPT
    + """  AND a.next_attempt_at >= $1 AND (a.next_attempt_at, a.id) > ($1, $2)
  AND a.next_attempt_at <= $3
ORDER BY a.next_attempt_at, a.id
LIMIT $4
"""
)

# The same for attempts already rescued once: those still the latest of their pair.
_STILL_OVERDUE = (
    _OVERDUE_ATTEMPT
    + """  AND a.id = ANY($1::text[]) AND a.next_attempt_at >= $2
ORDER BY a.next_attempt_at, a.id
"""
)


def _attempt(row: Any) -> Attempt:
    return Attempt(
        id=row["id"],
        event_id=row["event_id"],
        event_type=row["event_type"],
        endpoint_id=row["endpoint_id"],
        attempt=row["attempt"],
        trigger=row["trigger"],
        outcome=row["outcome"],
        status_code=row["status_code"],
        error=row["error"],
        duration_ms=row["duration_ms"],
        response_body=row["response_body"],
        attempted_ms=to_ms(row["attempted_at"]),
        next_attempt_ms=opt_ms(row["next_attempt_at"]),
    )


class DeliveryLog:
    """Writes and pages the delivery log."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def record(
        self, attempts: Sequence[Attempt], q: Unit | None = None, again: bool = False
    ) -> list[None]:
        """Write a batch of attempts in one round trip (in ``q``'s transaction when given).

        ``again``: the batch is written again after a write that seemed to fail, and may have
        committed (its reply lost with the connection), so the attempts already in the log
        are left out, after one look-up in the same transaction."""
        if again and q is None:
            async with self._db.transaction() as unit:
                return await self.record(attempts, unit, again)
        if again:
            assert q is not None
            query = """SELECT id FROM delivery_attempts
                       WHERE event_id = ANY($1::text[]) AND id = ANY($2::text[])"""
            events, ids = [a.event_id for a in attempts], [a.id for a in attempts]
            logged = {row["id"] for row in await q.fetch(query, events, ids)}
            rows = [a.row() for a in attempts if a.id not in logged]
        else:
            rows = [a.row() for a in attempts]
        if q is not None:
            if rows:
                await q.copy("delivery_attempts", COLUMNS, rows)
        else:
            async with self._db.connection() as unit:
                await unit.copy("delivery_attempts", COLUMNS, rows)
        return [None] * len(attempts)

    async def attempted(self, event_id: str, endpoint_id: str, attempt: int, trigger: str) -> bool:
        """Whether this attempt of this event at this endpoint is in the log."""
        found = await self._db.fetchval(
            """SELECT EXISTS (SELECT 1 FROM delivery_attempts WHERE event_id = $1
                   AND endpoint_id = $2 AND attempt = $3 AND trigger = $4)""",
            event_id,
            endpoint_id,
            attempt,
            trigger,
        )
        return bool(found)

    async def succeeded(self, event_id: str, endpoint_ids: Sequence[str]) -> set[str]:
        """Which of ``endpoint_ids`` have a successful attempt of ``event_id`` in the log (an
        endpoint belongs to one scope, so its id names the event's scope too)."""
        rows = await self._db.fetch(
            """SELECT DISTINCT endpoint_id FROM delivery_attempts WHERE event_id = $1
                   AND endpoint_id = ANY($2::text[]) AND outcome = 'success'""",
            event_id,
            list(endpoint_ids),
        )
        return {row["endpoint_id"] for row in rows}

    async def attempted_since(self, event_id: str, endpoint_id: str, since_ms: int) -> bool:
        """Whether any attempt of this event at this endpoint was made at ``since_ms`` or later
        (whichever trigger, attempt number or copy of the event made it)."""
        found = await self._db.fetchval(
            """SELECT EXISTS (SELECT 1 FROM delivery_attempts WHERE event_id = $1
                   AND endpoint_id = $2 AND attempted_at >= $3)""",
            event_id,
            endpoint_id,
            to_dt(since_ms),
        )
        return bool(found)

    async def statuses(self, scope: Scope, event_id: str) -> list[dict[str, Any]]:
        """Per-endpoint delivery state of ``scope``'s event, from each of the scope's
        endpoints' latest attempt."""
        rows = await self._db.fetch(
            f"""SELECT DISTINCT ON (endpoint_id) {", ".join(COLUMNS)} FROM delivery_attempts
                WHERE {_OF_EVENT} ORDER BY endpoint_id, attempted_at DESC, id DESC""",
            event_id,
            scope.org,
            scope.env,
        )
        return [_status(_attempt(row)) for row in rows]

    async def hourly(self, endpoint_id: str, now_ms: int, hours: int = 24) -> list[Hour]:
        """An endpoint's attempts per hour, oldest first, the hour of ``now_ms`` last (so far).

        Reads the aggregate ``endpoint_hourly_outcomes`` (kept by a trigger on the log), one
        range of its primary key, never the log itself. Hours without attempts are zeros.
        """
        current = now_ms - now_ms % HOUR_MS
        first = current - (hours - 1) * HOUR_MS
        rows = await self._db.fetch(
            """SELECT hour, sum(succeeded)::bigint AS succeeded, sum(failed)::bigint AS failed
               FROM endpoint_hourly_outcomes WHERE endpoint_id = $1 AND hour >= $2
               GROUP BY hour""",
            endpoint_id,
            to_dt(first),
        )
        counted = {to_ms(row["hour"]): (row["succeeded"], row["failed"]) for row in rows}
        return [
            Hour(start, *counted.get(start, (0, 0))) for start in range(first, current + 1, HOUR_MS)
        ]

    async def for_event(
        self, scope: Scope, event_id: str, limit: int, cursor: str | None
    ) -> tuple[list[dict[str, Any]], str | None]:
        """``scope``'s event's attempts (at the scope's endpoints), newest first."""
        return await self._page(_OF_EVENT, [event_id, scope.org, scope.env], limit, cursor)

    async def for_endpoint(
        self,
        endpoint_id: str,
        limit: int,
        cursor: str | None,
        search: LogFilter = NO_FILTER,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """An endpoint's attempts that ``search`` keeps, newest first."""
        endpoints = "(SELECT $1::text AS id)"
        return await self._search(endpoints, [endpoint_id], limit, cursor, search)

    async def for_scope(
        self, scope: Scope, limit: int, cursor: str | None, search: LogFilter = NO_FILTER
    ) -> tuple[list[dict[str, Any]], str | None]:
        """The attempts at every endpoint of ``scope`` that ``search`` keeps, newest first."""
        endpoints = "(SELECT id FROM webhook_endpoints WHERE org_id = $1 AND env = $2)"
        return await self._search(endpoints, [scope.org, scope.env], limit, cursor, search)

    async def _search(
        self,
        endpoints: str,
        args: list[Any],
        limit: int,
        cursor: str | None,
        search: LogFilter,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """The attempts at the ``endpoints`` (a subquery of ids over ``args``) that
        ``search`` keeps, newest first, and the cursor of the next page.

        Each endpoint's page is one range of an index ordered like the list (a LATERAL
        subquery per endpoint, as ``svc.db.paging.page_of_any`` does), and the pages are
        merged; a cursor is bound to the search it came from (``InvalidCursor`` otherwise).
        """
        where, args = narrowed("a.endpoint_id = one.id", args, conditions(search))
        if cursor is not None:
            ms, last_id = unbind(cursor, search)
            args += [to_dt(ms), last_id]
            where += f" AND (a.attempted_at, a.id) < (${len(args) - 1}, ${len(args)})"
        args.append(limit + 1)
        rows = await self._db.fetch(
            f"""SELECT page.* FROM {endpoints} AS one CROSS JOIN LATERAL (
                    SELECT {", ".join(f"a.{c}" for c in COLUMNS)} FROM delivery_attempts a
                    WHERE {where} ORDER BY a.attempted_at DESC, a.id DESC LIMIT ${len(args)}
                ) AS page ORDER BY page.attempted_at DESC, page.id DESC LIMIT ${len(args)}""",
            *args,
        )
        attempts = [_attempt(row) for row in rows[:limit]]
        last = attempts[-1] if len(rows) > limit else None
        next_cursor = None if last is None else log_cursor(last.attempted_ms, last.id, search)
        return [a.public() for a in attempts], next_cursor

    async def skipped(self, q: Queries, endpoint_id: str, limit: int) -> list[str]:
        """Ids of up to ``limit`` events skipped at ``endpoint_id`` while it was disabled and
        not attempted there since, in the order they were created."""
        rows = await q.fetch(_SKIPPED, endpoint_id, limit)
        return [row["event_id"] for row in rows]

    async def _page(
        self, where: str, args: list[Any], limit: int, cursor: str | None
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Records matching ``where`` (over ``args``) newest first and the cursor of the next
        page (None on the last page)."""
        n = len(args)
        if cursor is None:
            rows = await self._db.fetch(
                f"{_SELECT} WHERE {where} ORDER BY attempted_at DESC, id DESC LIMIT ${n + 1}",
                *args,
                limit + 1,
            )
        else:
            ms, last_id = cursors.decode(cursor)
            rows = await self._db.fetch(
                f"""{_SELECT} WHERE {where} AND (attempted_at, id) < (${n + 1}, ${n + 2})
                    ORDER BY attempted_at DESC, id DESC LIMIT ${n + 3}""",
                *args,
                to_dt(ms),
                last_id,
                limit + 1,
            )
        attempts = [_attempt(row) for row in rows[:limit]]
        more = len(rows) > limit
        last = attempts[-1] if attempts else None
        next_cursor = cursors.encode(last.attempted_ms, last.id) if more and last else None
        return [a.public() for a in attempts], next_cursor

    async def overdue(
        self, q: Queries, after: tuple[int, str], until_ms: int, limit: int
    ) -> list[Overdue]:
        """Up to ``limit`` latest attempts of an event at an endpoint that failed and whose
        next attempt was due after ``after`` (a time in milliseconds and an attempt id, the
        place the last batch ended) and at ``until_ms`` at the latest, in that order; ordered
        and disabled endpoints left out."""
        rows = await q.fetch(_OVERDUE, to_dt(after[0]), after[1], to_dt(until_ms), limit)
        return [_overdue(row) for row in rows]

    async def still_overdue(self, q: Queries, found: list[Overdue]) -> list[Overdue]:
        """Those of ``found`` that are still the latest attempt of their event at their
        endpoint (nothing was attempted there since), endpoint neither disabled nor ordered."""
        if not found:
            return []
        since = min(o.next_attempt_ms for o in found)
        rows = await q.fetch(_STILL_OVERDUE, [o.id for o in found], to_dt(since))
        return [_overdue(row) for row in rows]


def _status(attempt: Attempt) -> dict[str, Any]:
    succeeded = attempt.outcome == "success"
    if succeeded:
        state = "succeeded"
    elif attempt.outcome == SKIPPED_DISABLED:
        state = SKIPPED_DISABLED
    elif attempt.next_attempt_ms is None:
        state = "exhausted"
    else:
        state = "failed"
    return {
        "endpoint_id": attempt.endpoint_id,
        "state": state,
        "attempts": attempt.attempt,
        "last_attempt_at": iso_ms(attempt.attempted_ms),
        "last_status_code": attempt.status_code,
        "last_error": attempt.error,
        "next_attempt_at": None if succeeded else opt_iso(attempt.next_attempt_ms),
    }


def opt_iso(ms: int | None) -> str | None:
    return None if ms is None else iso_ms(ms)


def _overdue(row: Any) -> Overdue:
    return Overdue(
        row["id"],
        row["event_id"],
        row["endpoint_id"],
        row["attempt"],
        row["trigger"],
        to_ms(row["next_attempt_at"]),
        None if row["first_attempted_at"] is None else to_ms(row["first_attempted_at"]),
        Scope(row["org_id"], row["env"]),
    )
