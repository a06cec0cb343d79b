"""Ordered delivery's store: the deliveries waiting for their turn, and who runs each lane.

An endpoint with ``ordered`` gets one delivery at a time, oldest event first: the head of its
lane (``ordered_deliveries`` by event creation time) is attempted until it succeeds or is
exhausted, and only then the next. One dispatcher runs a lane at a time, under a lease it
renews; when it dies the lease runs out and another takes the lane where it stood (the
head's attempt count and schedule are on its row).
"""

from __future__ import annotations

from collections.abc import Sequence

from svc.db import Database
from svc.db.times import opt_ms, to_dt, to_ms
from svc.events.model import Head, Waiting


class OrderedLanes:
    """Reads and writes lanes; ``owner`` names one dispatcher process."""

    def __init__(self, db: Database, owner: str) -> None:
        self._db = db
        self._owner = owner

    async def enqueue(self, waiting: Sequence[Waiting]) -> list[None]:
        """Queue deliveries (a repeat of one already queued changes nothing); one round trip."""
        async with self._db.transaction() as unit:
            await unit.execute(
                """INSERT INTO ordered_deliveries (endpoint_id, event_created_at, event_id,
                       org_id, env, event_type, traceparent)
                   SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[],
                                        $5::text[], $6::text[], $7::text[])
                   ON CONFLICT DO NOTHING""",
                [w.endpoint_id for w in waiting],
                [to_dt(w.event_created_ms) for w in waiting],
                [w.event_id for w in waiting],
                [w.org for w in waiting],
                [w.env for w in waiting],
                [w.event_type for w in waiting],
                [w.traceparent for w in waiting],
            )
            await unit.execute(
                """INSERT INTO ordered_lanes (endpoint_id) SELECT DISTINCT unnest($1::text[])
                   ON CONFLICT DO NOTHING""",
                sorted({w.endpoint_id for w in waiting}),
            )
        return [None] * len(waiting)

    async def claim(self, lease: float, limit: int) -> list[str]:
        """Take up to ``limit`` lanes that have deliveries waiting and no live owner."""
        rows = await self._db.fetch(
            """UPDATE ordered_lanes SET owner = $1,
                      lease_until = now() + make_interval(secs => $2)
               WHERE endpoint_id IN (
                   SELECT l.endpoint_id FROM ordered_lanes l
                   JOIN webhook_endpoints w ON w.id = l.endpoint_id AND NOT w.disabled
                   WHERE l.lease_until < now() AND EXISTS (
                       SELECT 1 FROM ordered_deliveries d WHERE d.endpoint_id = l.endpoint_id)
                   ORDER BY l.lease_until LIMIT $3 FOR UPDATE OF l SKIP LOCKED)
               RETURNING endpoint_id""",
            self._owner,
            lease,
            limit,
        )
        return [str(row["endpoint_id"]) for row in rows]

    async def renew(self, endpoint_ids: Sequence[str], lease: float) -> set[str]:
        """Extend the leases of lanes still ours; returns those (a lost one must stop)."""
        rows = await self._db.fetch(
            """UPDATE ordered_lanes SET lease_until = now() + make_interval(secs => $3)
               WHERE endpoint_id = ANY($2::text[]) AND owner = $1 RETURNING endpoint_id""",
            self._owner,
            list(endpoint_ids),
            lease,
        )
        return {str(row["endpoint_id"]) for row in rows}

    async def release(self, endpoint_id: str) -> None:
        """Leave a lane (empty, or its endpoint gone or disabled); anyone may take it again."""
        await self._db.execute(
            """UPDATE ordered_lanes SET owner = '', lease_until = '-infinity'
               WHERE endpoint_id = $1 AND owner = $2""",
            endpoint_id,
            self._owner,
        )

    async def head(self, endpoint_id: str) -> Head | None:
        """The oldest delivery waiting in a lane, or None when it is empty."""
        row = await self._db.fetchrow(
            """SELECT d.*, e.body FROM ordered_deliveries d
               LEFT JOIN events e ON e.id = d.event_id AND e.created_at = d.event_created_at
                 AND e.org_id = d.org_id AND e.env = d.env
               WHERE d.endpoint_id = $1
               ORDER BY d.event_created_at, d.event_id LIMIT 1""",
            endpoint_id,
        )
        if row is None:
            return None
        waiting = Waiting(
            endpoint_id,
            row["event_id"],
            to_ms(row["event_created_at"]),
            row["org_id"],
            row["env"],
            row["event_type"],
            row["traceparent"],
        )
        return Head(
            waiting,
            row["body"],
            row["attempt"],
            row["step"],
            opt_ms(row["first_attempt_at"]) or 0,
            opt_ms(row["next_attempt_at"]),
        )

    async def failed(self, head: Head, step: int, first_ms: int, next_ms: int) -> None:
        """The head's attempt failed: the next one is due at ``next_ms``."""
        await self._db.execute(
            """UPDATE ordered_deliveries SET attempt = attempt + 1, step = $4,
                      first_attempt_at = $5, next_attempt_at = $6
               WHERE endpoint_id = $1 AND event_created_at = $2 AND event_id = $3""",
            head.waiting.endpoint_id,
            to_dt(head.waiting.event_created_ms),
            head.waiting.event_id,
            step,
            to_dt(first_ms),
            to_dt(next_ms),
        )

    async def done(self, head: Head) -> None:
        """The head succeeded or is exhausted: the next delivery's turn."""
        await self._db.execute(
            """DELETE FROM ordered_deliveries
               WHERE endpoint_id = $1 AND event_created_at = $2 AND event_id = $3""",
            head.waiting.endpoint_id,
            to_dt(head.waiting.event_created_ms),
            head.waiting.event_id,
        )

    async def drop(self, endpoint_id: str) -> None:
        """The endpoint was deleted: nothing in its lane will be sent."""
        await self._db.execute("DELETE FROM ordered_deliveries WHERE endpoint_id = $1", endpoint_id)

    async def held(self) -> int:
        """Deliveries waiting behind the head of their lane, over every lane."""
        count = await self._db.fetchval(
            "SELECT count(*) - count(DISTINCT endpoint_id) FROM ordered_deliveries"
        )
        return int(count or 0)
