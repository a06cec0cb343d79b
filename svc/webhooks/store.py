"""Webhook endpoints in PostgreSQL; signing secrets are stored encrypted (``svc.crypto``).

Both the current and the previous secret are sealed bound to the endpoint's id, so that a
rotation moves the current ciphertext into the previous one's columns in one statement.

Two reads of the delivery log are the endpoint's own. An enabled endpoint is failing for
``window`` at ``cutoff`` (= now - window) when it has attempts after the cutoff, none of them
a success, and its newest attempt at or before the cutoff (since it was created or last
turned on) failed: its current streak of failures then began at or before the cutoff. Each
test is one short read of the index ``delivery_attempts_endpoint``; the last one (no success
after the cutoff) reads an endpoint's recent attempts only while that endpoint still looks
failing, which is about to end with its disabling. A bulk recover takes the events an
endpoint has not received since a time, oldest first: an event whose latest attempt at the
endpoint since then is not a success (failed, with or without a next attempt), or one created
since then, of a type the endpoint subscribes to and never attempted there (it was stored
while the endpoint was disabled). Test events of other endpoints are never taken. Events are
those of the endpoint's scope only (another scope's event may carry the same id), and so are
the test sends that leave one out.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from svc.crypto import SecretBox
from svc.db import Database, Queries, lock_id
from svc.db.paging import page
from svc.db.times import opt_dt, opt_ms, to_dt, to_ms
from svc.ids import new_id
from svc.orgs import Scope
from svc.signing import new_signing_secret
from svc.webhooks.model import (
    DISABLED_FAILING,
    DISABLED_MANUALLY,
    EDITABLE,
    Disabled,
    Endpoint,
    Options,
)

_COLUMNS = (
    "id, org_id, env, url, events, description, secret, secret_key_id, created_at, "
    "previous_secret, previous_secret_key_id, previous_secret_expires_at, signature_scheme, "
    "rate_limit, ordered, disabled, disabled_reason, headers, headers_key_id, filter, "
    "client_certificate, client_key, client_key_key_id, server_ca"
)
_SCOPED = "WHERE id = $1 AND org_id = $2 AND env = $3"

# Scalar subqueries, not EXISTS: the planner keeps them as per-endpoint index reads instead
# of turning them into joins over every recent attempt of every endpoint.
_FAILING = """
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


class Endpoints:
    """Endpoint storage; every client read is scoped to an organisation and environment."""

    def __init__(self, db: Database, box: SecretBox) -> None:
        self._db = db
        self._box = box

    async def create(
        self,
        q: Queries,
        scope: Scope,
        url: str,
        events: list[str],
        description: str = "",
        options: Options = Options(),  # noqa: B008 (frozen, so one shared default is safe)
    ) -> Endpoint:
        endpoint = Endpoint(
            id=new_id("we"),
            org=scope.org,
            env=scope.env,
            url=url,
            events=tuple(events),
            secret=new_signing_secret(),
            description=description,
            created_ms=int(time.time() * 1000),
            signature_scheme=options.signature_scheme,
            rate_limit=options.rate_limit,
            ordered=options.ordered,
            disabled=options.disabled,
            disabled_reason=DISABLED_MANUALLY if options.disabled else None,
            headers=dict(options.headers),
            filter=options.filter,
            client_certificate=options.client_certificate,
            client_key=options.client_key,
            server_ca=options.server_ca,
        )
        key_id, sealed = self._box.seal(endpoint.secret.encode(), endpoint.id)
        headers, headers_key_id = self._sealed_headers(endpoint.id, endpoint.headers)
        client_key, client_key_id = self._sealed(endpoint.id, endpoint.client_key)
        await q.execute(
            """INSERT INTO webhook_endpoints (id, org_id, env, url, events, description, secret,
                   secret_key_id, created_at, signature_scheme, rate_limit, ordered, disabled,
                   disabled_reason, disabled_at, headers, headers_key_id, filter,
                   client_certificate, client_key, client_key_key_id, server_ca)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,
                   CASE WHEN $13::boolean THEN $9::timestamptz END, $15, $16, $17::jsonb,
                   $18, $19, $20, $21)""",
            endpoint.id,
            endpoint.org,
            endpoint.env,
            endpoint.url,
            list(endpoint.events),
            endpoint.description,
            sealed,
            key_id,
            to_dt(endpoint.created_ms),
            endpoint.signature_scheme,
            endpoint.rate_limit,
            endpoint.ordered,
            endpoint.disabled,
            endpoint.disabled_reason,
            headers,
            headers_key_id,
            _json(endpoint.filter),
            endpoint.client_certificate,
            client_key,
            client_key_id,
            endpoint.server_ca,
        )
        return endpoint

    def _sealed(self, endpoint_id: str, text: str | None) -> tuple[bytes | None, str | None]:
        """``text`` sealed for its endpoint (None, None: nothing)."""
        if text is None:
            return None, None
        key_id, sealed = self._box.seal(text.encode(), endpoint_id)
        return sealed, key_id

    def _sealed_headers(
        self, endpoint_id: str, headers: Mapping[str, str]
    ) -> tuple[bytes | None, str | None]:
        """The custom headers sealed for their endpoint (None, None: none)."""
        if not headers:
            return None, None
        key_id, sealed = self._box.seal(orjson.dumps(dict(headers)), endpoint_id)
        return sealed, key_id

    async def count_locked(self, q: Queries, scope: Scope) -> int:
        """How many endpoints ``scope`` has; its other counts wait until ``q``'s transaction
        ends (a transaction-level advisory lock), so creations checked against it one by one
        never exceed a cap together."""
        await q.execute("SELECT pg_advisory_xact_lock($1)", _scope_lock(scope))
        count: int = await q.fetchval(
            "SELECT count(*) FROM webhook_endpoints WHERE org_id = $1 AND env = $2",
            scope.org,
            scope.env,
        )
        return count

    async def update(
        self, q: Queries, scope: Scope, endpoint_id: str, changes: Mapping[str, Any], now_ms: int
    ) -> Endpoint | None:
        """Apply ``changes`` (fields of ``EDITABLE`` and ``disabled``); None when not found.

        ``disabled: true`` turns an endpoint off by hand (reason ``manual``; one already off
        keeps its reason); ``disabled: false`` turns it on, clears the reason and starts
        counting failures for the automatic disabling afresh.
        """
        sets: list[str] = []
        args: list[Any] = [endpoint_id, scope.org, scope.env]
        for name in EDITABLE:
            if name in changes:
                value = changes[name]
                if name == "filter":
                    args.append(_json(value))
                    sets.append(f"filter = ${len(args)}::jsonb")
                    continue
                args.append(list(value) if name == "events" else value)
                sets.append(f"{name} = ${len(args)}")
        if "headers" in changes:
            args += self._sealed_headers(endpoint_id, changes["headers"] or {})
            sets.append(f"headers = ${len(args) - 1}, headers_key_id = ${len(args)}")
        if "client_key" in changes:
            args += self._sealed(endpoint_id, changes["client_key"])
            sets.append(f"client_key = ${len(args) - 1}, client_key_key_id = ${len(args)}")
        if changes.get("disabled") is not None:
            args.append(to_dt(now_ms))
            sets += _switch(bool(changes["disabled"]), f"${len(args)}")
        if not sets:
            return await self.get(scope, endpoint_id, q)
        row = await q.fetchrow(
            f"UPDATE webhook_endpoints SET {', '.join(sets)} {_SCOPED} RETURNING {_COLUMNS}",
            *args,
        )
        return None if row is None else self._endpoint(row)

    async def rotate(
        self, q: Queries, scope: Scope, endpoint_id: str, previous_expires_ms: int | None
    ) -> Endpoint | None:
        """Give the endpoint a new secret; the current one becomes the previous secret until
        ``previous_expires_ms`` (None: it stops at once). An older previous secret is
        dropped. None when the endpoint is not found."""
        secret = new_signing_secret()
        key_id, sealed = self._box.seal(secret.encode(), endpoint_id)
        row = await q.fetchrow(
            f"""UPDATE webhook_endpoints SET
                   previous_secret = CASE WHEN $6::timestamptz IS NULL THEN NULL ELSE secret END,
                   previous_secret_key_id =
                       CASE WHEN $6::timestamptz IS NULL THEN NULL ELSE secret_key_id END,
                   previous_secret_expires_at = $6, secret = $4, secret_key_id = $5
               {_SCOPED} RETURNING {_COLUMNS}""",
            endpoint_id,
            scope.org,
            scope.env,
            sealed,
            key_id,
            opt_dt(previous_expires_ms),
        )
        return None if row is None else self._endpoint(row)

    async def disabled_locked(self, q: Queries, scope: Scope, endpoint_id: str) -> bool | None:
        """Whether the endpoint is disabled now (None: not in ``scope``); its row stays locked
        until ``q``'s transaction ends, so a change made there knows what it changed."""
        found: bool | None = await q.fetchval(
            f"SELECT disabled FROM webhook_endpoints {_SCOPED} FOR UPDATE",
            endpoint_id,
            scope.org,
            scope.env,
        )
        return found

    async def load(self, endpoint_id: str) -> Endpoint | None:
        """An endpoint by id, whatever its scope (for roles that act on jobs)."""
        row = await self._db.fetchrow(
            f"SELECT {_COLUMNS} FROM webhook_endpoints WHERE id = $1", endpoint_id
        )
        return None if row is None else self._endpoint(row)

    async def in_scope(self, org: str, env: str) -> list[Endpoint]:
        """Every endpoint of one organisation and environment, disabled ones included (for
        the dispatchers' cache)."""
        rows = await self._db.fetch(
            f"SELECT {_COLUMNS} FROM webhook_endpoints WHERE org_id = $1 AND env = $2",
            org,
            env,
        )
        return [self._endpoint(row) for row in rows]

    async def get(
        self, scope: Scope, endpoint_id: str, q: Queries | None = None
    ) -> Endpoint | None:
        """An endpoint of ``scope``; another scope's endpoint is None, as if it did not exist."""
        row = await (q or self._db).fetchrow(
            f"SELECT {_COLUMNS} FROM webhook_endpoints {_SCOPED}",
            endpoint_id,
            scope.org,
            scope.env,
        )
        return None if row is None else self._endpoint(row)

    async def delete(self, q: Queries, scope: Scope, endpoint_id: str) -> bool:
        status = await q.execute(
            f"DELETE FROM webhook_endpoints {_SCOPED}", endpoint_id, scope.org, scope.env
        )
        return status != "DELETE 0"

    async def page(
        self, scope: Scope, limit: int, cursor: str | None
    ) -> tuple[list[Endpoint], str | None]:
        """Endpoints newest first and the cursor of the next page."""
        select = f"SELECT {_COLUMNS} FROM webhook_endpoints WHERE org_id = $1 AND env = $2"
        return await page(self._db, select, [scope.org, scope.env], limit, cursor, self._endpoint)

    async def subscribers_of(self, scopes: list[tuple[str, str, str]]) -> list[list[str]]:
        """Ids of the enabled endpoints subscribed to each (organisation, environment, event
        type), in one round trip."""
        rows = await self._db.fetch(
            """SELECT s.i, e.id
               FROM unnest($1::text[], $2::text[], $3::text[])
                    WITH ORDINALITY AS s(org, env, type, i)
               JOIN webhook_endpoints e
                 ON e.org_id = s.org AND e.env = s.env AND s.type = ANY(e.events)
                    AND NOT e.disabled
               ORDER BY s.i, e.id""",
            [org for org, _, _ in scopes],
            [env for _, env, _ in scopes],
            [event_type for _, _, event_type in scopes],
        )
        found: list[list[str]] = [[] for _ in scopes]
        for row in rows:
            found[row["i"] - 1].append(row["id"])
        return found

    async def filters(self, endpoint_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The payload filters of those of these endpoints that have one."""
        rows = await self._db.fetch(
            """SELECT id, filter FROM webhook_endpoints
               WHERE id = ANY($1::text[]) AND filter IS NOT NULL""",
            list(endpoint_ids),
        )
        return {row["id"]: orjson.loads(row["filter"]) for row in rows}

    async def subscribers(self, org: str, env: str, event_type: str) -> list[str]:
        """Ids of the enabled endpoints subscribed to ``event_type`` in a scope, now."""
        return (await self.subscribers_of([(org, env, event_type)]))[0]

    async def failing(self, cutoff_ms: int, limit: int, unnoticed: bool = False) -> list[str]:
        """Ids of enabled endpoints failing since at least ``cutoff_ms`` (see the module);
        with ``unnoticed``, only those whose failing episode was not told yet."""
        rows = await self._db.fetch(_FAILING, to_dt(cutoff_ms), limit, not unnoticed)
        return [row["id"] for row in rows]

    async def disable_failing(
        self, q: Queries, endpoint_ids: Sequence[str], cutoff_ms: int, now_ms: int
    ) -> list[Disabled]:
        """Disable these endpoints with reason ``failing``, unless turned off or on since they
        were found (by their owner, or by another scheduler); returns those disabled here."""
        rows = await q.fetch(
            """UPDATE webhook_endpoints
               SET disabled = true, disabled_reason = $4, disabled_at = $3,
                   failing_noticed_at = NULL, exhausted_noticed_at = NULL
               WHERE id = ANY($1::text[]) AND NOT disabled
                 AND coalesce(enabled_at, created_at) <= $2
               RETURNING id, org_id, env, url""",
            list(endpoint_ids),
            to_dt(cutoff_ms),
            to_dt(now_ms),
            DISABLED_FAILING,
        )
        return [Disabled(row["id"], Scope(row["org_id"], row["env"]), row["url"]) for row in rows]

    async def undelivered(
        self, q: Queries, endpoint: Endpoint, since_ms: int, limit: int
    ) -> list[str]:
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

    def _open(self, row: Any, column: str) -> str:
        return self._box.open(row[f"{column}_key_id"], bytes(row[column]), row["id"]).decode()

    def _endpoint(self, row: Any) -> Endpoint:
        previous = None if row["previous_secret"] is None else self._open(row, "previous_secret")
        return Endpoint(
            id=row["id"],
            org=row["org_id"],
            env=row["env"],
            url=row["url"],
            events=tuple(row["events"]),
            secret=self._open(row, "secret"),
            description=row["description"],
            created_ms=to_ms(row["created_at"]),
            previous_secret=previous,
            previous_secret_expires_ms=opt_ms(row["previous_secret_expires_at"]),
            signature_scheme=row["signature_scheme"],
            rate_limit=row["rate_limit"],
            ordered=row["ordered"],
            disabled=row["disabled"],
            disabled_reason=row["disabled_reason"],
            headers={}
            if row["headers"] is None
            else orjson.loads(
                self._box.open(row["headers_key_id"], bytes(row["headers"]), row["id"])
            ),
            filter=None if row["filter"] is None else orjson.loads(row["filter"]),
            client_certificate=row["client_certificate"],
            client_key=None if row["client_key"] is None else self._open(row, "client_key"),
            server_ca=row["server_ca"],
        )


def _json(value: Any) -> str | None:
    """``value`` as a jsonb parameter (None stays SQL NULL)."""
    return None if value is None else orjson.dumps(value).decode()


def _scope_lock(scope: Scope) -> int:
    """The advisory lock of ``scope``'s endpoint count."""
    return lock_id(b"endpoints", scope.org.encode(), scope.env.encode())


def _switch(disabled: bool, now: str) -> list[str]:
    """SET items turning an endpoint off or on at ``now`` (a parameter)."""
    # Turning an endpoint off or on ends its failure episode (``svc.notices``).
    episode = "failing_noticed_at = NULL, exhausted_noticed_at = NULL"
    if disabled:  # an endpoint already off keeps its reason and time
        return [
            episode,
            "disabled_reason = CASE WHEN disabled THEN disabled_reason "
            f"ELSE '{DISABLED_MANUALLY}' END",
            f"disabled_at = CASE WHEN disabled THEN disabled_at ELSE {now} END",
            "disabled = true",
        ]
    return [
        episode,
        f"enabled_at = CASE WHEN disabled THEN {now} ELSE enabled_at END",
        "disabled = false, disabled_reason = NULL, disabled_at = NULL",
    ]
