"""Stored events and their outbox: an event commits with its outbox row, in its producer's
transaction.

An event is identified within its scope: (organisation, environment, id). A foreign producer
picks its own ids (order numbers), so two scopes may each hold an event with one id; every
read here names the scope, and each scope reads only its own.

The outbox row is deleted once the broker confirms the publish; the scheduler's sweep
re-publishes rows older than ``SVC_OUTBOX_SWEEP_AGE``, so a producer that dies between its
commit and the publish loses nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import orjson

from svc.db import Database, Queries, Unit
from svc.db.paging import narrowed, page, page_of_any
from svc.db.times import opt_dt, to_dt, to_ms
from svc.envelope import Event
from svc.events.model import StoredEvent
from svc.orgs.model import Scope


class Events:
    """Event storage; rows go with their day's partition (see ``svc.db.partitions``)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def insert(self, unit: Unit, event: Event, org: str, outbox: bool = True) -> None:
        """Add the event (and its outbox row) to ``unit``'s transaction (staged writes: see
        ``Unit.write``)."""
        created = to_dt(event.created_ms)
        # Staged: they reach PostgreSQL with the rest of the unit's change, in one statement.
        unit.write(
            "INSERT INTO events (id, org_id, env, type, created_at, body) "
            "VALUES ($1, $2, $3, $4, $5, $6)",
            event.id,
            org,
            event.environment,
            event.type,
            created,
            event.body,
        )
        if outbox:
            unit.write(
                "INSERT INTO outbox (event_id, created_at, org_id, env) VALUES ($1, $2, $3, $4)",
                event.id,
                created,
                org,
                event.environment,
            )

    async def store_if_absent(self, stored: StoredEvent, received_ms: int) -> StoredEvent:
        """Keep an event a foreign producer published without storing it, unless its scope
        already holds one with its id (another scope's event with that id is another event);
        returns the event filed under the time of its scope's row (one round trip).

        It is filed under the time it arrived: the producer's own clock decides nothing here,
        and its deliveries carry the stored time, so an ordered lane finds the event's row.
        """
        event = stored.event
        created = await self._db.fetchval(
            """WITH found AS (
                   SELECT created_at FROM events WHERE id = $1 AND org_id = $2 AND env = $3
                   LIMIT 1
               ), added AS (
                   INSERT INTO events (id, org_id, env, type, created_at, body)
                   SELECT $1, $2, $3, $4, $5, $6 WHERE NOT EXISTS (SELECT 1 FROM found)
                   RETURNING created_at)
               SELECT created_at FROM found UNION ALL SELECT created_at FROM added""",
            event.id,
            stored.org,
            event.environment,
            event.type,
            to_dt(received_ms),
            event.body,
        )
        return StoredEvent(replace(event, created_ms=to_ms(created)), stored.org)

    async def load(
        self, scope: Scope, event_id: str, q: Queries | None = None
    ) -> StoredEvent | None:
        """The event of ``scope`` with this id, or None (never another scope's)."""
        row = await (q or self._db).fetchrow(
            """SELECT id, org_id, env, type, created_at, body FROM events
               WHERE id = $1 AND org_id = $2 AND env = $3 LIMIT 1""",
            event_id,
            scope.org,
            scope.env,
        )
        return None if row is None else _stored(row)

    async def bodies(self, q: Queries, scope: Scope, event_ids: Sequence[str]) -> dict[str, bytes]:
        """The bodies of the events of ``scope`` with these ids (those still stored)."""
        rows = await q.fetch(
            """SELECT id, body FROM events
               WHERE id = ANY($1::text[]) AND org_id = $2 AND env = $3""",
            list(event_ids),
            scope.org,
            scope.env,
        )
        return {row["id"]: bytes(row["body"]) for row in rows}

    async def sole(self, event_id: str) -> StoredEvent | None:
        """The event with this id when a single scope holds one; None when none does, or
        several do. For requests staged before they named their event's scope."""
        row = await self._db.fetchrow(
            """SELECT id, org_id, env, type, created_at, body FROM events e WHERE id = $1
                 AND NOT EXISTS (SELECT 1 FROM events o
                                 WHERE o.id = $1 AND (o.org_id, o.env) <> (e.org_id, e.env))
               LIMIT 1""",
            event_id,
        )
        return None if row is None else _stored(row)

    async def about(
        self, scope: Scope, subject_id: str, since_ms: int, until_ms: int, limit: int
    ) -> list[StoredEvent]:
        """Events of ``scope`` whose ``data.id`` is ``subject_id`` (a payment, say), created
        between ``since_ms`` and ``until_ms``, oldest first.

        Events have no subject column: the time range keeps the search within a few
        partitions and a short stretch of the scope's index, and the bodies are matched as
        bytes, then parsed here (a foreign body PostgreSQL's jsonb refuses cannot fail it).
        """
        rows = await self._db.fetch(
            """SELECT id, org_id, env, type, created_at, body FROM events
               WHERE org_id = $1 AND env = $2 AND created_at BETWEEN $3 AND $4
                 AND position($5::bytea IN body) > 0
               ORDER BY created_at, id LIMIT $6""",
            scope.org,
            scope.env,
            to_dt(since_ms),
            to_dt(until_ms),
            orjson.dumps(subject_id),
            limit,
        )
        found = [_stored(row) for row in rows]
        return [stored for stored in found if _subject(stored.event.body) == subject_id]

    async def listed(
        self,
        scope: Scope,
        types: Sequence[str],
        since_ms: int | None,
        until_ms: int | None,
        limit: int,
        cursor: str | None,
    ) -> tuple[list[StoredEvent], str | None]:
        """A scope's stored events newest first, foreign producers' included, of ``types``
        (any when empty) created from ``since_ms`` up to before ``until_ms``; and the cursor
        of the next page. Retention has dropped what is older."""
        select, args = narrowed(
            "SELECT id, org_id, env, type, created_at, body FROM events "
            "WHERE org_id = $1 AND env = $2",
            [scope.org, scope.env],
            [("created_at >= {}", opt_dt(since_ms)), ("created_at < {}", opt_dt(until_ms))],
        )
        if types:  # each type one ordered range of events_scope_type, however rare it is
            return await page_of_any(
                self._db, select, args, "type", sorted(set(types)), limit, cursor, _stored
            )
        return await page(self._db, select, args, limit, cursor, _stored)

    async def published(self, event_ids: Sequence[str], q: Queries | None = None) -> list[None]:
        """The broker confirmed these events: drop their outbox rows (one statement)."""
        await (q or self._db).execute(
            "DELETE FROM outbox WHERE event_id = ANY($1::text[])", list(event_ids)
        )
        return [None] * len(event_ids)

    async def lock_stragglers(
        self, unit: Unit, older_than_ms: int, limit: int
    ) -> list[StoredEvent]:
        """Events whose outbox row is older than ``older_than_ms`` (their publish was lost),
        locked in ``unit`` with ``SKIP LOCKED``: sweepers running at once take disjoint rows
        and hold them until their publishes are confirmed and the rows deleted. A row names
        its event's scope (rows staged before it did are read by id and time alone)."""
        rows = await unit.fetch(
            """WITH due AS (
                   SELECT event_id, created_at, org_id, env FROM outbox WHERE created_at < $1
                   ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)
               SELECT due.event_id AS id, e.org_id, e.env, e.type, e.created_at, e.body
               FROM due LEFT JOIN events e
                 ON e.id = due.event_id AND e.created_at = due.created_at
                    AND (due.org_id IS NULL OR (e.org_id, e.env) = (due.org_id, due.env))""",
            to_dt(older_than_ms),
            limit,
        )
        gone = [str(row["id"]) for row in rows if row["body"] is None]
        if gone:  # dropped by retention before it could be sent: nothing to publish
            await self.published(gone, unit)
        return [_stored(row) for row in rows if row["body"] is not None]


def _subject(body: bytes) -> object:
    envelope = orjson.loads(body)
    data = envelope.get("data") if isinstance(envelope, dict) else None
    return data.get("id") if isinstance(data, dict) else None


def _stored(row: Any) -> StoredEvent:
    event = Event(
        id=row["id"],
        type=row["type"],
        environment=row["env"],
        created_ms=to_ms(row["created_at"]),
        body=bytes(row["body"]),
    )
    return StoredEvent(event, row["org_id"])
