"""Webhook endpoints in PostgreSQL: creation, changes, rotation, reads and the subscribers of
an event. Every read a client makes is scoped to an organisation and environment; the roles
that act on jobs load an endpoint by id. Rows and their sealed columns: ``rows``; the reads of
the delivery log for failing endpoints and bulk recover: ``log_reads``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from svc.crypto import SecretBox
from svc.db import Database, Queries, lock_id
from svc.db.paging import page
from svc.db.times import opt_dt, to_dt
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
from svc.webhooks.store.log_reads import FAILING, UNDELIVERED
from svc.webhooks.store.rows import COLUMNS as _COLUMNS
from svc.webhooks.store.rows import SEALED, Rows, json_parameter

_SCOPED = "WHERE id = $1 AND org_id = $2 AND env = $3"


class Endpoints:
    """Endpoint storage; every client read is scoped to an organisation and environment."""

    def __init__(self, db: Database, box: SecretBox) -> None:
        self._db = db
        self._rows = Rows(box)
        self._endpoint = self._rows.endpoint

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
            url_password=options.url_password,
        )
        rows = self._rows
        sealed, key_id = rows.seal(endpoint.id, endpoint.secret.encode())
        headers, headers_key_id = rows.seal_headers(endpoint.id, endpoint.headers)
        client_key = None if endpoint.client_key is None else endpoint.client_key.encode()
        client_key, client_key_id = rows.seal(endpoint.id, client_key)
        password = None if endpoint.url_password is None else endpoint.url_password.encode()
        password, password_key_id = rows.seal(endpoint.id, password)
        await q.execute(
            """INSERT INTO webhook_endpoints (id, org_id, env, url, events, description, secret,
                   secret_key_id, created_at, signature_scheme, rate_limit, ordered, disabled,
                   disabled_reason, disabled_at, headers, headers_key_id, filter,
                   client_certificate, client_key, client_key_key_id, server_ca, url_password,
                   url_password_key_id)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,
                   CASE WHEN $13::boolean THEN $9::timestamptz END, $15, $16, $17::jsonb,
                   $18, $19, $20, $21, $22, $23)""",
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
            json_parameter(endpoint.filter),
            endpoint.client_certificate,
            client_key,
            client_key_id,
            endpoint.server_ca,
            password,
            password_key_id,
        )
        return endpoint

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
                    args.append(json_parameter(value))
                    sets.append(f"filter = ${len(args)}::jsonb")
                    continue
                args.append(list(value) if name == "events" else value)
                sets.append(f"{name} = ${len(args)}")
        if "headers" in changes:
            args += self._rows.seal_headers(endpoint_id, changes["headers"] or {})
            sets.append(f"headers = ${len(args) - 1}, headers_key_id = ${len(args)}")
        for sealed in ("client_key", "url_password"):
            if sealed in changes:
                plain = changes[sealed]
                args += self._rows.seal(endpoint_id, None if plain is None else plain.encode())
                sets.append(f"{sealed} = ${len(args) - 1}, {sealed}_key_id = ${len(args)}")
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
        sealed, key_id = self._rows.seal(endpoint_id, secret.encode())
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

    async def reseal(self) -> int:
        """Seal again under the current key every sealed column of every endpoint sealed under
        another; returns how many were. One transaction: all or none."""
        count = 0
        columns = ", ".join(f"{c}, {c}_key_id" for c in SEALED)
        stale = " OR ".join(f"{c}_key_id <> $1" for c in SEALED)
        async with self._db.transaction() as unit:
            query = f"SELECT id, {columns} FROM webhook_endpoints WHERE {stale} FOR UPDATE"
            for row in await unit.fetch(query, self._rows.current_key):
                for column in SEALED:
                    if (resealed := self._rows.reseal(row, column)) is not None:
                        await unit.execute(
                            f"UPDATE webhook_endpoints SET {column} = $2, {column}_key_id = $3 "
                            "WHERE id = $1",
                            row["id"],
                            *resealed,
                        )
                        count += 1
        return count

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

    async def filters(self, scope: Scope, endpoint_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The payload filters of those of these endpoints of ``scope`` that have one."""
        rows = await self._db.fetch(
            """SELECT id, filter FROM webhook_endpoints
               WHERE id = ANY($1::text[]) AND org_id = $2 AND env = $3 AND filter IS NOT NULL""",
            list(endpoint_ids),
            scope.org,
            scope.env,
        )
        return {row["id"]: orjson.loads(row["filter"]) for row in rows}

    async def subscribers(self, org: str, env: str, event_type: str) -> list[str]:
        """Ids of the enabled endpoints subscribed to ``event_type`` in a scope, now."""
        return (await self.subscribers_of([(org, env, event_type)]))[0]

    async def failing(self, cutoff_ms: int, limit: int, unnoticed: bool = False) -> list[str]:
        """Ids of enabled endpoints failing since at least ``cutoff_ms`` (see the module);
        with ``unnoticed``, only those whose failing episode was not told yet."""
        rows = await self._db.fetch(FAILING, to_dt(cutoff_ms), limit, not unnoticed)
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
            UNDELIVERED,
            endpoint.id,
            to_dt(since_ms),
            endpoint.org,
            endpoint.env,
            to_dt(max(since_ms, endpoint.created_ms)),
            list(endpoint.events),
            limit,
        )
        return list(dict.fromkeys(row["id"] for row in rows))


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
