"""Notification addresses, the notices to mail (an outbox the scheduler drains) and the
marks of an endpoint's failure episode, in PostgreSQL.

An episode's marks (``failing_noticed_at``, ``exhausted_noticed_at`` on the endpoint) are set
when its first notice of that kind is staged, so each kind is told once per episode; they are
cleared when the endpoint is turned off or on, or by ``end_episodes`` once a success follows
them. Every read of addresses is scoped to an organisation and environment.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from svc.db import Database, Queries
from svc.db.times import to_dt
from svc.notices.model import Exhausted, Notice
from svc.orgs.model import Scope

_NOTICE_COLUMNS = "id, org_id, env, kind, endpoint_id, url, detail, tries"

# The endpoints whose newest mark precedes a success: their episode is over. Each reads the
# endpoint's attempts since its mark (delivery_attempts_endpoint).
_ENDED = """
UPDATE webhook_endpoints e SET failing_noticed_at = NULL, exhausted_noticed_at = NULL
WHERE (e.failing_noticed_at IS NOT NULL OR e.exhausted_noticed_at IS NOT NULL)
  AND (SELECT true FROM delivery_attempts a
       WHERE a.endpoint_id = e.id AND a.outcome = 'success'
         AND a.attempted_at > greatest(e.failing_noticed_at, e.exhausted_noticed_at)
       LIMIT 1)
RETURNING e.id
"""


class Notices:
    """Addresses, notices and episode marks."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def emails(self, scope: Scope, q: Queries | None = None) -> list[str]:
        """The addresses ``scope``'s notices go to (none named: empty)."""
        found = await (q or self._db).fetchval(
            "SELECT emails FROM notification_settings WHERE org_id = $1 AND env = $2",
            scope.org,
            scope.env,
        )
        return list(found or [])

    async def set_emails(
        self, q: Queries, scope: Scope, emails: Sequence[str], now_ms: int
    ) -> None:
        await q.execute(
            """INSERT INTO notification_settings (org_id, env, emails, updated_at)
               VALUES ($1, $2, $3, $4)
               ON CONFLICT (org_id, env) DO UPDATE
                   SET emails = excluded.emails, updated_at = excluded.updated_at""",
            scope.org,
            scope.env,
            list(emails),
            to_dt(now_ms),
        )

    async def stage(
        self,
        q: Queries,
        scope: Scope,
        kind: str,
        endpoint_id: str,
        url: str,
        detail: str,
        now_ms: int,
    ) -> None:
        """Keep a notice to mail, due at once."""
        await q.execute(
            """INSERT INTO notices (org_id, env, kind, endpoint_id, url, detail, created_at,
                   due_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $7)""",
            scope.org,
            scope.env,
            kind,
            endpoint_id,
            url,
            detail,
            to_dt(now_ms),
        )

    async def due(self, q: Queries, now_ms: int, limit: int) -> list[Notice]:
        """Up to ``limit`` notices due by ``now_ms``, oldest first, locked until ``q``'s
        transaction ends (another scheduler skips them)."""
        rows = await q.fetch(
            f"""SELECT {_NOTICE_COLUMNS} FROM notices WHERE due_at <= $1
                ORDER BY due_at, id LIMIT $2 FOR UPDATE SKIP LOCKED""",
            to_dt(now_ms),
            limit,
        )
        return [_notice(row) for row in rows]

    async def done(self, q: Queries, notice_ids: Sequence[int]) -> None:
        """Forget notices that were sent (or given up)."""
        await q.execute("DELETE FROM notices WHERE id = ANY($1::bigint[])", list(notice_ids))

    async def again(self, q: Queries, notice_id: int, due_ms: int, error: str) -> None:
        """A notice whose mail failed: tried again at ``due_ms``."""
        await q.execute(
            "UPDATE notices SET tries = tries + 1, due_at = $2, last_error = $3 WHERE id = $1",
            notice_id,
            to_dt(due_ms),
            error[:500],
        )

    async def mark_failing(
        self, q: Queries, endpoint_ids: Sequence[str], now_ms: int
    ) -> list[tuple[str, Scope, str]]:
        """Mark these enabled endpoints failing unless their episode was told already;
        returns (id, scope, URL) of those marked here."""
        rows = await q.fetch(
            """UPDATE webhook_endpoints SET failing_noticed_at = $2
               WHERE id = ANY($1::text[]) AND failing_noticed_at IS NULL AND NOT disabled
               RETURNING id, org_id, env, url""",
            list(endpoint_ids),
            to_dt(now_ms),
        )
        return [(row["id"], Scope(row["org_id"], row["env"]), row["url"]) for row in rows]

    async def mark_exhausted(
        self, q: Queries, endpoint_ids: Sequence[str], now_ms: int
    ) -> dict[str, Exhausted]:
        """Mark these endpoints as having an exhausted event in their episode; by id, each
        with its scope and URL and whether this was the episode's first (a deleted endpoint
        is left out)."""
        rows = await q.fetch(
            """WITH old AS (
                   SELECT id, exhausted_noticed_at IS NULL AS first FROM webhook_endpoints
                   WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE)
               UPDATE webhook_endpoints e
               SET exhausted_noticed_at = coalesce(e.exhausted_noticed_at, $2)
               FROM old WHERE e.id = old.id
               RETURNING e.id, e.org_id, e.env, e.url, old.first""",
            sorted(set(endpoint_ids)),
            to_dt(now_ms),
        )
        return {
            row["id"]: Exhausted(row["id"], row["org_id"], row["env"], row["url"], row["first"])
            for row in rows
        }

    async def end_episodes(self) -> list[str]:
        """Clear the marks of endpoints that succeeded since; their ids."""
        rows = await self._db.fetch(_ENDED)
        return [row["id"] for row in rows]


def _notice(row: Any) -> Notice:
    return Notice(
        id=row["id"],
        org=row["org_id"],
        env=row["env"],
        kind=row["kind"],
        endpoint_id=row["endpoint_id"],
        url=row["url"],
        detail=row["detail"],
        tries=row["tries"],
    )
