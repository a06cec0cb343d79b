"""The listing run's fill: one scope's events (every type) with their delivery attempts at
two endpoints, and its payments, written straight into PostgreSQL with ``INSERT … SELECT``
over ``generate_series`` in the rows' own form, then vacuumed and analysed."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import asyncpg

from svc.db import Unit
from svc.db.partitions import ensure_partitions
from svc.orgs import Scope

log = logging.getLogger(__name__)


TYPE = "payment.succeeded"
"""The type of the filtered event list (24 % of the events)."""
RARE_TYPE = "chargeback.created"
"""The type of the rarely matching filtered event list (0.1 % of the events)."""
STATUS = "succeeded"
"""The status of the filtered payment list."""
SECOND_ENDPOINT = ("payment.succeeded", "payment.failed")
"""The second endpoint's subscription (about 30 % of the events); the first one, whose
delivery log is read, takes every type."""
CHUNK = 100_000
"""Rows per fill statement; two statements run at once."""


_ALPHABET = "0123456789abcdefghijklmnopqrstuv"
# Shares (by a hash of the row number) of the event types, per mille; payment statuses and
# channels, per cent.
_TYPES = (
    ("payment.created", 240),
    ("payment.authorized", 40),
    ("payment.succeeded", 240),
    ("payment.failed", 60),
    ("payment.canceled", 40),
    ("refund.succeeded", 100),
    ("refund.failed", 20),
    ("payout.paid", 60),
    ("chargeback.created", 1),
    ("terminal.online", 100),
    ("terminal.offline", 99),
)
_STATUSES = (("succeeded", 62), ("failed", 14), ("canceled", 10), ("pending", 9), ("authorized", 5))
_CHANNELS = (("online", 50), ("phone", 20), ("terminal", 30))


@dataclass(frozen=True, slots=True)
class Sizes:
    """What the listing run fills and how many requests it times."""

    events: int
    payments: int
    days: float
    samples: int
    warm_up: int
    limit: int
    settle: float


def _pick(shares: Sequence[tuple[str, int]], hashed: str) -> str:
    """SQL choosing a name of ``shares`` by the bigint ``hashed``, each as often as its share."""
    total, cases = 0, []
    for name, share in shares:
        total += share
        cases.append(f"WHEN ({hashed}) % {{total}} < {total} THEN '{name}'")
    return "CASE " + " ".join(case.format(total=total) for case in cases) + " END"


def _b32(expr: str, chars: int) -> str:
    """SQL for the low ``5 × chars`` bits of the bigint ``expr`` in base32hex, most significant
    digit first, as ``svc.ids`` spells ids."""
    return " || ".join(
        f"substr('{_ALPHABET}', ((({expr}) >> {5 * k}) & 31)::int + 1, 1)"
        for k in reversed(range(chars))
    )


def _id(prefix: str, ms: str, seq: str, salt: str) -> str:
    """SQL for an id of ``svc.ids``' form: its first 10 digits are the millisecond in
    base32hex (so ids sort by creation time, as the service's do), the other 16 hex digits
    (a part of the same alphabet) of a hash of the row number ``seq``."""
    return (
        f"'{prefix}_' || {_b32(f'{ms} << 2', 10)} || substr(md5(({seq})::text || '{salt}'), 1, 16)"
    )


def _at(ms: str) -> str:
    """SQL for the timestamptz of unix milliseconds ``ms`` (exact, no float)."""
    return f"(timestamptz 'epoch' + ({ms}) * interval '1 millisecond')"


# Row i of n is created at start + i × span / n (ms): the newest-first order is i descending.
# The first parameters of every fill statement: $1 and $2 the first and last i, $3 start ms,
# $4 span ms, $5 n.
_ROWS = "generate_series($1::bigint, $2::bigint) AS g(i)"
_MS = "$3::bigint + g.i * $4::bigint / $5::bigint"


def _hash(salt: str) -> str:
    """SQL for 40 bits of a hash of the row number."""
    return f"('x' || substr(md5(g.i::text || '{salt}'), 1, 10))::bit(40)::bigint"


# OFFSET 0 keeps each subquery whole (not flattened into the outer query), so that its
# columns are computed once per row, not again at every use.
_EVENT_ROWS = f"""
    SELECT g.i, t.ms, h.h, t.type, {_id("evt", "t.ms", "g.i", "event id")} AS id,
           {_at("t.ms")} AS created_at
    FROM {_ROWS}
    CROSS JOIN LATERAL (SELECT {_hash("event")} AS h OFFSET 0) AS h
    CROSS JOIN LATERAL (SELECT {_MS} AS ms, {_pick(_TYPES, "h.h")} AS type OFFSET 0) AS t"""

_ISO_CREATED = """to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')"""
_DATA = """format(
        '{"id":"%s_%s","object":"%s","status":"%s","amount":%s,"currency":"CHF"}',
        left(e.type, 3), substr(e.id, 5), split_part(e.type, '.', 1),
        split_part(e.type, '.', 2), 500 + e.h % 20000)"""

# One statement per chunk of events: the events ($6 the organisation, $7 the environment)
# and their attempts. Every event's first attempt is at the endpoint of every type ($8),
# 40–240 ms after the event; one in ten answered 503 and succeeded on the retry a minute
# later. Events of the second endpoint's types ($10) go to it too ($9).
FILL_EVENTS = f"""
WITH e AS MATERIALIZED ({_EVENT_ROWS}),
stored AS (
    INSERT INTO events (id, org_id, env, type, created_at, body)
    SELECT e.id, $6, $7, e.type, e.created_at, convert_to(format(
        '{{"id":"%s","type":"%s","created_at":"%s","environment":"%s","data":%s}}',
        e.id, e.type, {_ISO_CREATED}, $7::text, {_DATA}), 'UTF8')
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

# Payments likewise; $6 the organisation, $7 the environment, $8 the scope's two terminals
# (for the payments of the terminal channel).
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


def chunks(count: int, size: int) -> Iterator[tuple[int, int]]:
    """Inclusive ``(first, last)`` ranges of ``size`` covering ``0 .. count - 1``."""
    for first in range(0, count, size):
        yield first, min(first + size, count) - 1


async def fill(
    url: str,
    scope: Scope,
    endpoints: tuple[str, str],
    terminals: list[str],
    sizes: Sizes,
    now_ms: int,
) -> dict[str, Any]:
    """Events, their attempts and payments of ``scope`` over the ``days`` before ``now_ms``,
    each chunk one statement, two at once; then VACUUM (ANALYZE), as autovacuum would have
    left tables of that age, and a checkpoint. Returns the row counts and the times taken."""
    span = round(sizes.days * 86_400_000)
    start = now_ms - span - 120_000  # the newest event's retry is a minute in the past
    work: list[tuple[str, list[Any]]] = []
    for first, last in chunks(sizes.events, CHUNK):
        common = [first, last, start, span, sizes.events]
        events = [*common, scope.org, scope.env, *endpoints, list(SECOND_ENDPOINT)]
        work.append((FILL_EVENTS, events))
    for first, last in chunks(sizes.payments, CHUNK):
        common = [first, last, start, span, sizes.payments]
        work.append((FILL_PAYMENTS, [*common, scope.org, scope.env, terminals]))
    todo = iter(work)

    async def worker() -> None:
        conn = await asyncpg.connect(url)
        try:
            for statement, args in todo:  # one shared iterator: each takes the next chunk
                await conn.execute(statement, *args)
        finally:
            await conn.close()

    started = time.monotonic()
    conn = await asyncpg.connect(url)
    try:
        async with conn.transaction():
            # The partitions of the days before yesterday (the service made the later ones).
            first_day = datetime.fromtimestamp(start / 1000, UTC).date()
            today = datetime.fromtimestamp(now_ms / 1000, UTC).date()
            await ensure_partitions(Unit(conn), first_day, (today - first_day).days)
        await asyncio.gather(worker(), worker())
        filled = time.monotonic() - started
        log.info("listing: filled in %.0f s; vacuuming and analysing", filled)
        await conn.execute("VACUUM (ANALYZE) events, delivery_attempts, payments")
        # The fill wrote gigabytes of WAL: a checkpoint now, not spread over the timed requests
        # (CHECKPOINT needs a superuser or, from PostgreSQL 15 on, pg_checkpoint).
        with contextlib.suppress(asyncpg.InsufficientPrivilegeError):
            await conn.execute("CHECKPOINT")
        counts = {
            table: int(await conn.fetchval(f"SELECT count(*) FROM {table}"))
            for table in ("events", "delivery_attempts", "payments")
        }
        size = int(await conn.fetchval("SELECT pg_database_size(current_database())"))
    finally:
        await conn.close()
    return {
        **counts,
        "days": sizes.days,
        "fill_s": round(filled, 1),
        "vacuum_analyze_s": round(time.monotonic() - started - filled, 1),
        "database_mb": round(size / 2**20),
    }
