"""Finding and disabling endpoints whose every delivery attempt has failed for too long.

An enabled endpoint is failing for ``window`` at ``cutoff`` (= now - window) when it has
attempts after the cutoff, none of them a success, and its newest attempt at or before the
cutoff (since it was created or last turned on) failed: its current streak of failures then
began at or before the cutoff. Each test is one short read of the index
``delivery_attempts_endpoint``; the last one (no success after the cutoff) reads an
endpoint's recent attempts only while that endpoint still looks failing, which is about to
end with its disabling.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from svc.db import Queries
from svc.db.times import to_dt
from svc.orgs import Scope
from svc.webhooks.model import DISABLED_FAILING

# Scalar subqueries, not EXISTS: the planner keeps them as per-endpoint index reads instead
# of turning them into joins over every recent attempt of every endpoint.
_FAILING = """
WITH candidates AS MATERIALIZED (
    SELECT e.id FROM webhook_endpoints e
    WHERE NOT e.disabled AND coalesce(e.enabled_at, e.created_at) <= $1
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


@dataclass(frozen=True, slots=True)
class Disabled:
    """An endpoint just disabled, with its scope (to announce the change)."""

    id: str
    scope: Scope


async def failing(q: Queries, cutoff_ms: int, limit: int) -> list[str]:
    """Ids of enabled endpoints failing since at least ``cutoff_ms`` (see the module)."""
    rows = await q.fetch(_FAILING, to_dt(cutoff_ms), limit)
    return [row["id"] for row in rows]


async def disable_failing(
    q: Queries, endpoint_ids: Sequence[str], cutoff_ms: int, now_ms: int
) -> list[Disabled]:
    """Disable these endpoints with reason ``failing``, unless turned off or on since they
    were found (by their owner, or by another scheduler); returns those disabled here."""
    rows = await q.fetch(
        """UPDATE webhook_endpoints
           SET disabled = true, disabled_reason = $4, disabled_at = $3
           WHERE id = ANY($1::text[]) AND NOT disabled
             AND coalesce(enabled_at, created_at) <= $2
           RETURNING id, org_id, env""",
        list(endpoint_ids),
        to_dt(cutoff_ms),
        to_dt(now_ms),
        DISABLED_FAILING,
    )
    return [Disabled(row["id"], Scope(row["org_id"], row["env"])) for row in rows]
