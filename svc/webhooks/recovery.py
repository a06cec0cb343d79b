"""Bulk recover: the events an endpoint has not received since a time, oldest first.

An event is taken when, since that time, its latest attempt at the endpoint is not a
success (failed, with or without a next attempt), or when it was created since then, is of a
type the endpoint subscribes to and was never attempted there (it was stored while the
endpoint was disabled). Test events of other endpoints are never taken. Events are those of
the endpoint's scope only (another scope's event may carry the same id), and so are the test
sends that leave one out.
"""

from __future__ import annotations

from svc.db import Queries
from svc.db.times import to_dt
from svc.settings import MAX_RECOVER_EVENTS
from svc.webhooks.model import Endpoint

RECOVER_LIMIT = MAX_RECOVER_EVENTS
"""Most events one recover request sends, so that one request stays bounded
(``SVC_MAX_RECOVER_EVENTS`` may lower it)."""

# Attempts are timed by the dispatcher's clock, events by their producer's: a minute of
# slack keeps a first attempt a little "before" its event from counting as none. Each part
# reads an index: the endpoint's attempts (delivery_attempts_endpoint), the scope's events
# (events_scope, events_id_scope) and test sends (delivery_attempts_test).
_UNDELIVERED = """
WITH latest AS (
    SELECT DISTINCT ON (event_id) event_id, outcome FROM delivery_attempts
    WHERE endpoint_id = $1 AND attempted_at >= $2
    ORDER BY event_id, attempted_at DESC, id DESC
), failed AS (
    SELECT e.id, e.created_at FROM latest JOIN events e ON e.id = latest.event_id
    WHERE latest.outcome <> 'success' AND e.org_id = $3 AND e.env = $4
), unsent AS (
    SELECT e.id, e.created_at FROM events e
    WHERE e.org_id = $3 AND e.env = $4 AND e.created_at >= $5 AND e.type = ANY($6::text[])
      AND NOT EXISTS (
          SELECT 1 FROM delivery_attempts a
          WHERE a.endpoint_id = $1 AND a.attempted_at >= $5 - interval '1 minute'
            AND a.event_id = e.id)
      AND NOT EXISTS (
          SELECT 1 FROM delivery_attempts t
          JOIN webhook_endpoints w ON w.id = t.endpoint_id AND w.org_id = $3 AND w.env = $4
          WHERE t.trigger = 'test' AND t.event_id = e.id)
)
SELECT id FROM (SELECT * FROM failed UNION SELECT * FROM unsent) AS wanted
ORDER BY created_at, id
LIMIT $7
"""


async def undelivered(q: Queries, endpoint: Endpoint, since_ms: int, limit: int) -> list[str]:
    """Ids of up to ``limit`` events ``endpoint`` has not received since ``since_ms``, the
    oldest first (see the module)."""
    rows = await q.fetch(
        _UNDELIVERED,
        endpoint.id,
        to_dt(since_ms),
        endpoint.org,
        endpoint.env,
        to_dt(max(since_ms, endpoint.created_ms)),
        list(endpoint.events),
        limit,
    )
    return list(dict.fromkeys(row["id"] for row in rows))
