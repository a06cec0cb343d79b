"""Retries the broker lost: failed attempts whose next attempt is long overdue.

A retry waits in a RabbitMQ delay queue and comes back by dead-lettering. A classic queue
dead-letters at most once: a job whose delay runs out while the broker shuts down can vanish
(quorum queues with at-least-once dead-lettering cannot lose it). The delivery log knows
better: every failed attempt that is not exhausted names the time of the next one. When the
latest attempt of an event at an endpoint is such a failure and its next attempt is overdue
by more than ``SVC_RETRY_RESCUE_AFTER``, the scheduler queues that attempt again as a
stand-in job, which the dispatcher drops when the original turns up after all and was logged.
Ordered endpoints are left out (their lanes keep their own schedule in PostgreSQL), and so
are disabled ones (a recover sends their events once they are on again). Each attempt comes
with its endpoint's scope, the scope of the event it resends (events are identified within
their scope).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from svc.db import Queries
from svc.db.times import to_dt, to_ms
from svc.orgs import Scope

RESCUE_BATCH = 500

# Reads delivery_attempts_next for the window and delivery_attempts_event for later attempts
# of the same event at the same endpoint; the chain's first attempt (attempt 1 of the same
# trigger chain) dates the retry window.
_OVERDUE = """
SELECT a.id, a.event_id, a.endpoint_id, a.attempt, a.trigger, a.next_attempt_at,
       w.org_id, w.env,
       (SELECT max(f.attempted_at) FROM delivery_attempts f
        WHERE f.event_id = a.event_id AND f.endpoint_id = a.endpoint_id AND f.attempt = 1
          AND f.attempted_at <= a.attempted_at) AS first_attempted_at
FROM delivery_attempts a
JOIN webhook_endpoints w ON w.id = a.endpoint_id AND NOT w.disabled AND NOT w.ordered
WHERE a.next_attempt_at >= $1 AND (a.next_attempt_at, a.id) > ($1, $2) AND a.next_attempt_at <= $3
  AND NOT EXISTS (
      SELECT 1 FROM delivery_attempts b
      WHERE b.event_id = a.event_id AND b.endpoint_id = a.endpoint_id
        AND (b.attempted_at, b.id) > (a.attempted_at, a.id))
ORDER BY a.next_attempt_at, a.id
LIMIT $4
"""


# The same for attempts already rescued once: those still the latest of their pair.
_STILL_OVERDUE = """
SELECT a.id, a.event_id, a.endpoint_id, a.attempt, a.trigger, a.next_attempt_at,
       w.org_id, w.env,
       (SELECT max(f.attempted_at) FROM delivery_attempts f
        WHERE f.event_id = a.event_id AND f.endpoint_id = a.endpoint_id AND f.attempt = 1
          AND f.attempted_at <= a.attempted_at) AS first_attempted_at
FROM delivery_attempts a
JOIN webhook_endpoints w ON w.id = a.endpoint_id AND NOT w.disabled AND NOT w.ordered
WHERE a.id = ANY($1::text[]) AND a.next_attempt_at >= $2
  AND NOT EXISTS (
      SELECT 1 FROM delivery_attempts b
      WHERE b.event_id = a.event_id AND b.endpoint_id = a.endpoint_id
        AND (b.attempted_at, b.id) > (a.attempted_at, a.id))
ORDER BY a.next_attempt_at, a.id
"""


@dataclass(frozen=True, slots=True)
class Overdue:
    """The latest attempt of an event at an endpoint: failed, its next attempt overdue."""

    id: str
    event_id: str
    endpoint_id: str
    attempt: int
    trigger: str
    next_attempt_ms: int
    first_attempt_ms: int | None
    scope: Scope
    """The endpoint's scope, which is the event's."""


async def overdue(q: Queries, after: tuple[int, str], until_ms: int, limit: int) -> list[Overdue]:
    """Up to ``limit`` such attempts whose next attempt was due after ``after`` (a time in
    milliseconds and an attempt id, the place the last batch ended) and at ``until_ms`` at
    the latest, in that order."""
    rows = await q.fetch(_OVERDUE, to_dt(after[0]), after[1], to_dt(until_ms), limit)
    return [_overdue(row) for row in rows]


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


async def still_overdue(q: Queries, found: list[Overdue]) -> list[Overdue]:
    """Those of ``found`` that are still the latest attempt of their event at their endpoint
    (nothing was attempted there since), endpoint neither disabled nor ordered."""
    if not found:
        return []
    since = min(o.next_attempt_ms for o in found)
    rows = await q.fetch(_STILL_OVERDUE, [o.id for o in found], to_dt(since))
    return [_overdue(row) for row in rows]
