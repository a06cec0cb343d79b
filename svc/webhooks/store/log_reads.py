"""The two reads of the delivery log that belong to endpoints.

An enabled endpoint is failing for ``window`` at ``cutoff`` (= now - window) when it has
attempts after the cutoff, none of them a success, and its newest attempt at or before the
cutoff (since it was created or last turned on) failed: its current streak of failures then
began at or before the cutoff. Each test is one short read of the index
``delivery_attempts_endpoint``; the last one (no success after the cutoff) reads an
endpoint's recent attempts only while that endpoint still looks failing, which is about to end
with its disabling.

A bulk recover takes the events an endpoint has not received since a time, oldest first: an
event whose latest attempt at the endpoint since then is not a success (failed, with or
without a next attempt), or one created since then, of a type the endpoint subscribes to and
never attempted there (it was stored while the endpoint was disabled). Test events of other
endpoints are never taken. Events are those of the endpoint's scope only (another scope's
event may carry the same id), and so are the test sends that leave one out.
"""

from __future__ import annotations

# Scalar subqueries, not EXISTS: the planner keeps them as per-endpoint index reads instead
# of turning them into joins over every recent attempt of every endpoint.
FAILING = """
WITH candidates AS MATERIALIZED (
    SELECT e.id FROM webhook_endpoints e
    WHERE NOT e.disabled AND coalesce(e.enabled_at, e.created_at) <= $1
      AND ($3 OR e.failing_noticed_at IS NULL)
      AND (SELECT true FROM delivery_attempts a
           WHERE a.endpoint_id = e.id AND a.attempted_at > $1 LIMIT 1)
      AND (SELECT a.outcome FROM delivery_attempts a
           WHERE a.endpoint_id = e.id AND a.attempted_at <= $1
             AND a.attempted_at >= coalesce(e.enabled_at, e.created_at)
           ORDER BY a.attempted_at DESC, a.id DESC LIMIT 1) <> 'success'
)
SELECT c.id FROM candidates c
WHERE (SELECT true FROM delivery_attempts a
       WHERE a.endpoint_id = c.id AND a.attempted_at > $1 AND a.outcome = 'success'
       LIMIT 1) IS NULL
ORDER BY c.id
LIMIT $2
"""


# Attempts are timed by the dispatcher's clock, events by their producer's: a minute of
# slack keeps a first attempt a little "before" its event from counting as none. Each part
# reads an index: the endpoint's attempts (delivery_attempts_endpoint), the scope's events
# (events_scope, events_id_scope) and test sends (delivery_attempts_test).
UNDELIVERED = """
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
