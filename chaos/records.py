"""What the system of record holds for a scenario: its payments, their ``payment.created``
events, the payment each idempotency key is bound to, and delivery attempts of lost events."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from harness.load import BODY, CONTENT_TYPE, PATH
from svc.crypto import SecretBox
from svc.db import Database, open_database
from svc.errors import IdempotencyError, Unavailable
from svc.idempotency import Idempotency, fingerprint
from svc.keys.store import ApiKeys
from svc.orgs import Scope
from svc.orgs.store import Organisations


@dataclass
class Records:
    """One organisation's records."""

    payments: set[str] = field(default_factory=set)
    created_events: dict[str, list[str]] = field(default_factory=dict)
    """Payment id → ids of its ``payment.created`` events (one, unless an event was doubled)."""
    bound: dict[str, str] = field(default_factory=dict)
    """Idempotency key → id of the payment in its stored response (keys with a record; one
    whose record cannot be read back is left out)."""


async def _bindings(db: Database, box: SecretBox, scope: Scope, keys: list[str]) -> Records:
    found = Records()
    idempotency = Idempotency(db, box, ttl_s=86400)
    (shop_key,), _ = await ApiKeys(db, Organisations(db)).page(scope, 1, None)  # its one key
    fp = fingerprint("POST", PATH, CONTENT_TYPE, BODY)
    for key in keys:
        try:
            stored = await idempotency.find(scope, shop_key, key, fp)
        except IdempotencyError:
            continue
        if stored is not None:
            found.bound[key] = str(orjson.loads(stored.body)["id"])
    return found


async def read(database_url: str, secret_key: str, org: str, keys: list[str]) -> Records:
    """The records of ``org`` and of the idempotency ``keys`` it sent."""
    async with open_database(database_url, 2, wait=30) as db:
        found = await _bindings(db, SecretBox.parse(secret_key), Scope(org, "test"), keys)
        rows = await db.fetch("SELECT id FROM payments WHERE org_id = $1", org)
        found.payments = {row["id"] for row in rows}
        rows = await db.fetch(
            "SELECT id, body FROM events WHERE org_id = $1 AND type = 'payment.created'", org
        )
        events: dict[str, list[str]] = defaultdict(list)
        for row in rows:
            events[orjson.loads(bytes(row["body"]))["data"]["id"]].append(row["id"])
        found.created_events = dict(events)
    return found


async def read_when_up(
    database_url: str, secret_key: str, org: str, keys: list[str], patience: float
) -> Records:
    """``read``, retried while PostgreSQL is unavailable for up to ``patience`` seconds."""
    deadline = time.monotonic() + patience
    while True:
        try:
            return await read(database_url, secret_key, org, keys)
        except (Unavailable, OSError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(1)


async def attempts(database_url: str, event_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Every delivery attempt of ``event_ids`` and whether each still has an outbox row."""
    async with open_database(database_url, 1, wait=30) as db:
        rows = await db.fetch(
            """SELECT event_id, endpoint_id, attempt, trigger, outcome, status_code, error,
                      attempted_at, next_attempt_at
               FROM delivery_attempts WHERE event_id = ANY($1::text[])
               ORDER BY attempted_at""",
            event_ids,
        )
        pending = {
            row["event_id"]
            for row in await db.fetch(
                "SELECT event_id FROM outbox WHERE event_id = ANY($1::text[])", event_ids
            )
        }
    found: dict[str, list[dict[str, Any]]] = {e: [] for e in event_ids}
    for row in rows:
        found[row["event_id"]].append(
            {
                k: v.isoformat() if isinstance(v, datetime) else v
                for k, v in row.items()
                if k != "event_id"
            }
        )
    for event_id in pending:
        found[event_id].append({"outbox": "still waiting to be published"})
    return found
