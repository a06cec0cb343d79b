"""Webhook endpoints in PostgreSQL; signing secrets are stored encrypted (``svc.crypto``)."""

from __future__ import annotations

import time
from typing import Any

from svc import cursors
from svc.crypto import SecretBox
from svc.db import Database, Queries
from svc.db.times import to_dt, to_ms
from svc.ids import new_id, new_secret
from svc.orgs import Scope
from svc.webhooks.model import Endpoint

_COLUMNS = "id, org_id, env, url, events, description, secret, secret_key_id, created_at"


class Endpoints:
    """Endpoint storage; every client read is scoped to an organisation and environment."""

    def __init__(self, db: Database, box: SecretBox) -> None:
        self._db = db
        self._box = box

    async def create(
        self, q: Queries, scope: Scope, url: str, events: list[str], description: str = ""
    ) -> Endpoint:
        endpoint = Endpoint(
            id=new_id("we"),
            org=scope.org,
            env=scope.env,
            url=url,
            events=tuple(events),
            secret=new_secret("whsec_", 32),
            description=description,
            created_ms=int(time.time() * 1000),
        )
        key_id, sealed = self._box.seal(endpoint.secret.encode(), endpoint.id)
        await q.execute(
            f"INSERT INTO webhook_endpoints ({_COLUMNS}) "
            "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            endpoint.id,
            endpoint.org,
            endpoint.env,
            endpoint.url,
            list(endpoint.events),
            endpoint.description,
            sealed,
            key_id,
            to_dt(endpoint.created_ms),
        )
        return endpoint

    async def load(self, endpoint_id: str) -> Endpoint | None:
        """An endpoint by id, whatever its scope (for roles that act on jobs)."""
        row = await self._db.fetchrow(
            f"SELECT {_COLUMNS} FROM webhook_endpoints WHERE id = $1", endpoint_id
        )
        return None if row is None else self._endpoint(row)

    async def in_scope(self, org: str, env: str) -> list[Endpoint]:
        """Every endpoint of one organisation and environment (for the dispatchers' cache)."""
        rows = await self._db.fetch(
            f"SELECT {_COLUMNS} FROM webhook_endpoints WHERE org_id = $1 AND env = $2",
            org,
            env,
        )
        return [self._endpoint(row) for row in rows]

    async def get(self, scope: Scope, endpoint_id: str) -> Endpoint | None:
        """An endpoint of ``scope``; another scope's endpoint is None, as if it did not exist."""
        row = await self._db.fetchrow(
            f"SELECT {_COLUMNS} FROM webhook_endpoints WHERE id = $1 AND org_id = $2 AND env = $3",
            endpoint_id,
            scope.org,
            scope.env,
        )
        return None if row is None else self._endpoint(row)

    async def delete(self, q: Queries, scope: Scope, endpoint_id: str) -> bool:
        status = await q.execute(
            "DELETE FROM webhook_endpoints WHERE id = $1 AND org_id = $2 AND env = $3",
            endpoint_id,
            scope.org,
            scope.env,
        )
        return status != "DELETE 0"

    async def page(
        self, scope: Scope, limit: int, cursor: str | None
    ) -> tuple[list[Endpoint], str | None]:
        """Endpoints newest first and the cursor of the next page."""
        query = f"SELECT {_COLUMNS} FROM webhook_endpoints WHERE org_id = $1 AND env = $2"
        args: list[Any] = [scope.org, scope.env]
        if cursor is not None:
            ms, last_id = cursors.decode(cursor)
            query += " AND (created_at, id) < ($3, $4)"
            args += [to_dt(ms), last_id]
        query += f" ORDER BY created_at DESC, id DESC LIMIT ${len(args) + 1}"
        rows = await self._db.fetch(query, *args, limit + 1)
        endpoints = [self._endpoint(row) for row in rows[:limit]]
        if len(rows) <= limit or not endpoints:
            return endpoints, None
        return endpoints, cursors.encode(endpoints[-1].created_ms, endpoints[-1].id)

    async def subscribers_of(self, scopes: list[tuple[str, str, str]]) -> list[list[str]]:
        """Subscriber ids for many (organisation, environment, event type) in one round trip."""
        rows = await self._db.fetch(
            """SELECT s.i, e.id
               FROM unnest($1::text[], $2::text[], $3::text[])
                    WITH ORDINALITY AS s(org, env, type, i)
               JOIN webhook_endpoints e
                 ON e.org_id = s.org AND e.env = s.env AND s.type = ANY(e.events)
               ORDER BY s.i, e.id""",
            [org for org, _, _ in scopes],
            [env for _, env, _ in scopes],
            [event_type for _, _, event_type in scopes],
        )
        found: list[list[str]] = [[] for _ in scopes]
        for row in rows:
            found[row["i"] - 1].append(row["id"])
        return found

    async def subscribers(self, org: str, env: str, event_type: str) -> list[str]:
        """Ids of the endpoints subscribed to ``event_type`` in a scope, now."""
        return (await self.subscribers_of([(org, env, event_type)]))[0]

    def _endpoint(self, row: Any) -> Endpoint:
        secret = self._box.open(row["secret_key_id"], bytes(row["secret"]), row["id"])
        return Endpoint(
            id=row["id"],
            org=row["org_id"],
            env=row["env"],
            url=row["url"],
            events=tuple(row["events"]),
            secret=secret.decode(),
            description=row["description"],
            created_ms=to_ms(row["created_at"]),
        )
