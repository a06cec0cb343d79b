"""The listing run's fill: one scope's events with their delivery attempts at two endpoints, and
its payments, in the rows' own form, by ``INSERT … SELECT`` over ``generate_series``."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import asyncpg

from svc.db import Unit
from svc.db.partitions import ensure_partitions
from svc.orgs import Scope

log = logging.getLogger(__name__)

TYPE = "payment.succeeded"  # of the filtered event list (24 % of the events)
RARE_TYPE = "chargeback.created"  # of the rarely matching event list (0.1 %)
STATUS = "succeeded"  # of the filtered payment list
SECOND_ENDPOINT = ("payment.succeeded", "payment.failed")  # the first one takes every type
CHUNK = 100_000  # rows per fill statement; two statements run at once

# Shares (by a hash of the row number): event types per mille, payment statuses and channels
# per cent.
_TYPES = {
    "payment.created": 240,
    "payment.authorized": 40,
    "payment.succeeded": 240,
    "payment.failed": 60,
    "payment.canceled": 40,
    "refund.succeeded": 100,
    "refund.failed": 20,
    "payout.paid": 60,
    "chargeback.created": 1,
    "terminal.online": 100,
    "terminal.offline": 99,
}
_STATUSES = {"succeeded": 62, "failed": 14, "canceled": 10, "pending": 9, "authorized": 5}
_CHANNELS = {"online": 50, "phone": 20, "terminal": 30}


@dataclass(frozen=True, slots=True)
class Sizes:
    events: int
    payments: int
    days: float
    samples: int
    warm_up: int
    limit: int
    settle: float


def _pick(shares: dict[str, int], hashed: str) -> str:
    """SQL choosing a name of ``shares`` by the bigint ``hashed``, each as often as its share."""
    total = sum(shares.values())
    bounds = zip(shares, itertools.accumulate(shares.values()), strict=True)
    whens = " ".join(f"WHEN ({hashed}) % {total} < {b} THEN '{n}'" for n, b in bounds)
    return f"CASE {whens} END"


def _id(prefix: str, ms: str, seq: str, salt: str) -> str:
    """SQL for an id of ``svc.ids``' form (sorting by time): base32hex ms, a hash of ``seq``."""
    digits = " || ".join(
        f"substr('0123456789abcdefghijklmnopqrstuv', ((({ms}) << 2 >> {5 * k}) & 31)::int + 1, 1)"
        for k in reversed(range(10))
    )
    return f"'{prefix}_' || {digits} || substr(md5(({seq})::text || '{salt}'), 1, 16)"


def _at(ms: str) -> str:
    """SQL for the timestamptz of unix milliseconds ``ms`` (exact, no float)."""
    return f"(timestamptz 'epoch' + ({ms}) * interval '1 millisecond')"


def _hash(salt: str) -> str:
    """SQL for 40 bits of a hash of the row number."""
    return f"('x' || substr(md5(g.i::text || '{salt}'), 1, 10))::bit(40)::bigint"


# Row i of n is created at start + i × span / n (ms): the newest-first order is i descending.
# Every fill statement's parameters: $1 and $2 the first and last i, $3 start ms, $4 span ms,
# $5 n, $6 the organisation, $7 the environment. OFFSET 0 keeps each subquery whole (not
# flattened into the outer query), so that its columns are computed once per row.
_ROWS = "generate_series($1::bigint, $2::bigint) AS g(i)"
_MS = "$3::bigint + g.i * $4::bigint / $5::bigint"

# The events and their attempts: every event's first attempt is at the endpoint of every type
# ($8), 40–240 ms after the event; one in ten answered 503 and succeeded on the retry a minute
# later. Events of the second endpoint's types ($10) go to it too ($9).
FILL_EVENTS = f"""
WITH e AS MATERIALIZED (
    SELECT g.i, t.ms, h.h, t.type, {_id("evt", "t.ms", "g.i", "event id")} AS id,
           {_at("t.ms")} AS created_at
    FROM {_ROWS}
    CROSS JOIN LATERAL (SELECT {_hash("event")} AS h OFFSET 0) AS h
    CROSS JOIN LATERAL (SELECT {_MS} AS ms, {_pick(_TYPES, "h.h")} AS type OFFSET 0) AS t
),
stored AS (
    INSERT INTO events (id, org_id, env, type, created_at, body)
    SELECT e.id, $6, $7, e.type, e.created_at, convert_to(format(
        '{{"id":"%s","type":"%s","created_at":"%s","environment":"%s","data":%s}}',
        e.id, e.type, to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        $7::text, format(
            '{{"id":"%s_%s","object":"%s","status":"%s","amount":%s,"currency":"CHF"}}',
            left(e.type, 3), substr(e.id, 5), split_part(e.type, '.', 1),
            split_part(e.type, '.', 2), 500 + e.h % 20000)), 'UTF8')
    FROM e
)
INSERT INTO delivery_attempts (id, event_id, event_type, endpoint_id, attempt, trigger,
    outcome, status_code, error, duration_ms, response_body, attempted_at, next_attempt_at)
SELECT {_id("att", "a.ms", "a.seq", "attempt id")}, e.id, e.type, a.endpoint, a.attempt,
       a.trigger, a.outcome, a.status, NULL, a.duration, a.body, {_at("a.ms")}, {_at("a.next")}
FROM e
CROSS JOIN LATERAL (
    SELECT 3 * e.i AS seq, $8::text AS endpoint, 1 AS attempt, 'initial' AS trigger,
           CASE WHEN e.h % 10 = 3 THEN 'http_error' ELSE 'success' END AS outcome,
           CASE WHEN e.h % 10 = 3 THEN 503 ELSE 204 END AS status,
           (20 + e.h % 180)::double precision AS duration,
           CASE WHEN e.h % 10 = 3 THEN 'Service Unavailable' ELSE '' END AS body,
           e.ms + 40 + e.h % 200 AS ms,
           CASE WHEN e.h % 10 = 3 THEN e.ms + 60040 + e.h % 200 END AS next
    UNION ALL
    SELECT 3 * e.i + 1, $8::text, 2, 'retry', 'success', 204,
           (20 + e.h % 180)::double precision, '', e.ms + 60040 + e.h % 200, NULL
    WHERE e.h % 10 = 3
    UNION ALL
    SELECT 3 * e.i + 2, $9::text, 1, 'initial', 'success', 200,
           (15 + e.h % 90)::double precision, '{{"received":true}}', e.ms + 45 + e.h % 150,
           NULL
    WHERE e.type = ANY($10::text[])
) AS a"""

# The payments; $8 the scope's two terminals (for the payments of the terminal channel).
FILL_PAYMENTS = f"""
INSERT INTO payments (id, org_id, env, status, amount, currency, channel, success_url,
    checkout_token, terminal_id, failure_code, cancel_reason, created_at, updated_at,
    expires_at, fee)
SELECT {_id("pay", "p.ms", "g.i", "payment id")}, $6, $7, p.status, p.amount, 'CHF', p.channel,
       CASE WHEN p.channel <> 'terminal' THEN 'https://shop.example/done' END,
       CASE WHEN p.channel <> 'terminal' THEN substr(md5(g.i::text || 'checkout'), 1, 24) END,
       CASE WHEN p.channel = 'terminal' THEN ($8::text[])[1 + g.i % 2] END,
       CASE WHEN p.status = 'failed' THEN 'card_declined' END,
       CASE WHEN p.status = 'canceled' THEN 'requested_by_customer' END,
       {_at("p.ms")},
       {_at("p.ms + CASE WHEN p.status IN ('pending', 'authorized') THEN 0 ELSE 4000 END")},
       CASE WHEN p.channel <> 'terminal' THEN {_at("p.ms + 3600000")} END,
       CASE WHEN p.status = 'succeeded' THEN p.amount * 29 / 1000 + 30 END
FROM {_ROWS}
CROSS JOIN LATERAL (SELECT {_hash("payment")} AS h OFFSET 0) AS h
CROSS JOIN LATERAL (
    SELECT {_MS} AS ms, h.h, 500 + h.h % 20000 AS amount,
           {_pick(_STATUSES, "h.h")} AS status, {_pick(_CHANNELS, "h.h >> 8")} AS channel
    OFFSET 0
) AS p"""


async def fill(
    url: str, scope: Scope, endpoints: tuple[str, str], terminals: list[str], sizes: Sizes
) -> dict[str, Any]:
    """Fill ``scope`` over the ``days`` before now, vacuum and analyse; the tables' row counts."""
    now_ms = int(time.time() * 1000)
    span = round(sizes.days * 86_400_000)
    start = now_ms - span - 120_000  # the newest event's retry is a minute in the past
    scoped = [scope.org, scope.env]
    work = [
        (FILL_EVENTS, sizes.events, [*scoped, *endpoints, list(SECOND_ENDPOINT)]),
        (FILL_PAYMENTS, sizes.payments, [*scoped, terminals]),
    ]
    async with asyncpg.create_pool(url, min_size=2, max_size=2) as pool:
        async with pool.acquire() as conn, conn.transaction():
            # The partitions of the days before yesterday (the service made the later ones).
            first_day = datetime.fromtimestamp(start / 1000, UTC).date()
            today = datetime.fromtimestamp(now_ms / 1000, UTC).date()
            await ensure_partitions(Unit(conn), first_day, (today - first_day).days)
        await asyncio.gather(
            *(
                pool.execute(sql, first, min(first + CHUNK, n) - 1, start, span, n, *args)
                for sql, n, args in work
                for first in range(0, n, CHUNK)
            )
        )
        log.info("listing: filled; vacuuming and analysing")
        await pool.execute("VACUUM (ANALYZE) events, delivery_attempts, payments")
        # The fill wrote gigabytes of WAL: a checkpoint now, not spread over the timed requests
        # (CHECKPOINT needs a superuser or, from PostgreSQL 15 on, pg_checkpoint).
        with contextlib.suppress(asyncpg.InsufficientPrivilegeError):
            await pool.execute("CHECKPOINT")
        return {
            table: await pool.fetchval(f"SELECT count(*) FROM {table}")
            for table in ("events", "delivery_attempts", "payments")
        }
