"""The listing run: the API's lists of one large scope, the first page and a page deep in it.

One organisation's test environment is filled, in a database of its own, with the events of
``days`` days (every type), their delivery attempts at two endpoints and its payments (every
status and channel), straight into PostgreSQL with ``INSERT … SELECT`` over
``generate_series``, in the rows' own form (ids spelled like ``svc.ids`` spells them,
millisecond times, envelopes as delivered), then vacuumed and analysed. One ``svc api``
process serves the lists over HTTP to one client with a real API key, one request at a time.

Each list is asked for twice: its first page, and the page after a cursor that points half
way into it (a million newer rows for the events of the full fill). The cursor is the
service's own (``svc.cursors``) of the row at that position, found with the service's own
query of the list; the deep page must start with the row after it.

Each request's query is the service's own: the store that answers the route (``Events``,
``Payments``, ``DeliveryLog``) is called with the route's arguments on a stand-in database
that records the SQL and its arguments. The query is then prepared on a connection of the
service's own pool, executed a few times as a pool connection executes its prepared
statements (PostgreSQL settles on its generic or custom plan after five), and explained with
``ANALYZE, BUFFERS``. A plan passes when it reads an index, has no Seq Scan of a table or
partition of more than ``BIG_TABLE`` rows and sorts no more than ``SORT_PAGES`` pages of rows
(a keyset page read in index order sorts none).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, cast

import aiohttp
import asyncpg
import orjson

from benchmarks.database import bench_database
from benchmarks.machine import load, wait_for_quiet
from benchmarks.procs import Processes
from benchmarks.receipts import percentile
from benchmarks.service import ServiceSystem, Stores
from svc import cursors
from svc.db import Database, Unit
from svc.db.partitions import ensure_partitions
from svc.db.times import to_ms
from svc.envelope import EVENT_TYPES
from svc.events.deliveries import DeliveryLog
from svc.events.store import Events
from svc.orgs import Scope
from svc.payments.store import PaymentFilters, Payments

log = logging.getLogger(__name__)

SYSTEM = "svc-api-listing"
LABEL = "svc, 1 api"
TYPE = "payment.succeeded"
"""The type of the filtered event list (24 % of the events)."""
RARE_TYPE = "chargeback.created"
"""The type of the rarely matching filtered event list (0.1 % of the events)."""
STATUS = "succeeded"
"""The status of the filtered payment list."""
SECOND_ENDPOINT = ("payment.succeeded", "payment.failed")
"""The second endpoint's subscription (about 30 % of the events); the first one, whose
delivery log is read, takes every type."""
SORT_PAGES = 10
"""A Sort of more than this many pages of rows fails a plan: its cost grows with the list."""
BIG_TABLE = 10_000
"""A Seq Scan of a table or partition of more rows than this fails a plan."""
CHUNK = 100_000
"""Rows per fill statement; two statements run at once."""
QUIET_LOAD = 1.0
"""Before the timed requests: wait (``Sizes.settle`` seconds at most) for a 1-minute load
average below this, the fill's own load having passed."""
PLAN_RUNS = 8
"""Executions of a prepared query before it is explained: past PostgreSQL's five custom
plans, after which a prepared statement may switch to the generic plan."""
LISTS = (
    "events",
    "events of a type",
    "events of a rare type",
    "payments of a status",
    "endpoint's delivery log",
)

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
_DATA = """CASE split_part(e.type, '.', 1)
        WHEN 'payment' THEN format(
            '{"id":"pay_%s","object":"payment","status":"%s","amount":%s,"currency":"CHF",'
            '"channel":"online"}', substr(e.id, 5),
            CASE split_part(e.type, '.', 2) WHEN 'created' THEN 'pending'
                ELSE split_part(e.type, '.', 2) END, 500 + e.h % 20000)
        WHEN 'refund' THEN format(
            '{"id":"re_%s","object":"refund","payment_id":"pay_%s","status":"%s",'
            '"amount":%s,"currency":"CHF"}',
            substr(e.id, 5), substr(e.id, 5), split_part(e.type, '.', 2), 500 + e.h % 20000)
        WHEN 'payout' THEN format(
            '{"id":"po_%s","object":"payout","status":"paid","amount":%s,"currency":"CHF"}',
            substr(e.id, 5), 10000 + e.h % 2000000)
        WHEN 'chargeback' THEN format(
            '{"id":"cb_%s","object":"chargeback","payment_id":"pay_%s","amount":%s,'
            '"currency":"CHF","reason":"fraudulent"}',
            substr(e.id, 5), substr(e.id, 5), 500 + e.h % 20000)
        ELSE format('{"id":"trm_%s","object":"terminal","name":"Till %s","status":"%s"}',
            substr(e.id, 5), 1 + e.h % 2, split_part(e.type, '.', 2))
    END"""

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
INSERT INTO payments (id, org_id, env, status, amount, currency, channel, tip, success_url,
    checkout_token, terminal_id, tip_prompt, failure_code, cancel_reason, created_at,
    updated_at, expires_at, fee)
SELECT {_id("pay", "p.ms", "g.i", "payment id")}, $6, $7, p.status, p.amount, 'CHF', p.channel,
       CASE WHEN p.channel = 'terminal' AND p.status = 'succeeded' THEN p.h % 3 * 100
            ELSE 0 END,
       CASE WHEN p.channel <> 'terminal' THEN 'https://shop.example/done' END,
       CASE WHEN p.channel <> 'terminal' THEN substr(md5(g.i::text || 'checkout'), 1, 24) END,
       CASE WHEN p.channel = 'terminal' THEN ($8::text[])[1 + g.i % 2] END,
       p.channel = 'terminal' AND p.h % 4 = 0,
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


@dataclass
class Request:
    """One timed request: its API path and the service's query that answers it."""

    name: str
    path: str
    route: str
    """The path with ``{id}`` for the endpoint's id and ``{cursor}`` for the cursor."""
    sql: str
    args: list[Any]
    before: int
    """Rows of the list newer than the page."""
    first_id: str | None = None
    """The id the page must start with (a deep page)."""
    millis: list[float] = field(default_factory=list)


class _Recorder:
    """Stands in for a store's database: records each query and its arguments."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[Any]]] = []

    async def fetch(self, query: str, *args: Any) -> list[Any]:
        self.calls.append((query, list(args)))
        return []


class ServiceQueries:
    """The SQL the service's stores run for the listing routes, recorded from the stores."""

    def __init__(self, scope: Scope, endpoint_id: str) -> None:
        self._recorder = _Recorder()
        db = cast(Database, self._recorder)
        self._events, self._payments, self._log = Events(db), Payments(db), DeliveryLog(db)
        self._scope, self._endpoint_id = scope, endpoint_id

    async def page(self, kind: str, limit: int, cursor: str | None) -> tuple[str, list[Any]]:
        """The query and arguments of one page of list ``kind`` (one of ``LISTS``), as its
        ``GET`` route calls the store."""
        if kind == "events":
            await self._events.listed(self._scope, [], None, None, limit, cursor)
        elif kind == "events of a type":
            await self._events.listed(self._scope, [TYPE], None, None, limit, cursor)
        elif kind == "events of a rare type":
            await self._events.listed(self._scope, [RARE_TYPE], None, None, limit, cursor)
        elif kind == "payments of a status":
            await self._payments.page(self._scope, limit, cursor, PaymentFilters(status=STATUS))
        else:
            await self._log.for_endpoint(self._endpoint_id, limit, cursor)
        return self._recorder.calls.pop()

    def count(self, kind: str) -> tuple[Any, ...]:
        """A query counting the rows of list ``kind``, then its arguments (to find the middle)."""
        scope, where = self._scope, "org_id = $1 AND env = $2"
        if kind == "events":
            return f"SELECT count(*) FROM events WHERE {where}", scope.org, scope.env
        if kind in ("events of a type", "events of a rare type"):
            sql = f"SELECT count(*) FROM events WHERE {where} AND type = $3"
            return sql, scope.org, scope.env, TYPE if kind == "events of a type" else RARE_TYPE
        if kind == "payments of a status":
            sql = f"SELECT count(*) FROM payments WHERE {where} AND status = $3"
            return sql, scope.org, scope.env, STATUS
        sql = "SELECT count(*) FROM delivery_attempts WHERE endpoint_id = $1"
        return sql, self._endpoint_id


def path_of(kind: str, endpoint_id: str, limit: int) -> str:
    return {
        "events": f"/v1/events?limit={limit}",
        "events of a type": f"/v1/events?type={TYPE}&limit={limit}",
        "events of a rare type": f"/v1/events?type={RARE_TYPE}&limit={limit}",
        "payments of a status": f"/v1/payments?status={STATUS}&limit={limit}",
        "endpoint's delivery log": f"/v1/webhook_endpoints/{endpoint_id}/deliveries?limit={limit}",
    }[kind]


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


async def requests_of(
    db: Database, queries: ServiceQueries, endpoint_id: str, limit: int
) -> list[Request]:
    """The first and a deep page of every list. The deep page's cursor is that of the row in
    the middle of the list, read with the service's query of the list itself."""
    found = []
    for kind in LISTS:
        path, route = path_of(kind, endpoint_id, limit), path_of(kind, "{id}", limit)
        sql, args = await queries.page(kind, limit, None)
        found.append(Request(f"{kind}, first page", path, route, sql, args, 0))
        total = int(await db.fetchval(*queries.count(kind)))
        deep = total // 2
        if deep < 1:
            raise RuntimeError(f"listing: the {kind} list is empty")
        sql, args = await queries.page(kind, deep, None)  # rows 0 .. deep
        last, first = await db.fetch(f"SELECT * FROM ({sql}) AS listed OFFSET {deep - 1}", *args)
        moment = last["attempted_at"] if "attempted_at" in last else last["created_at"]
        cursor = cursors.encode(to_ms(moment), last["id"])
        sql, args = await queries.page(kind, limit, cursor)
        found.append(
            Request(
                f"{kind}, page after {deep:,} rows",
                f"{path}&cursor={cursor}",
                route + "&cursor={cursor}",
                sql,
                args,
                deep,
                first["id"],
            )
        )
        log.info("listing: %s holds %d rows; deep page after %d", kind, total, deep)
    return found


async def _get(session: aiohttp.ClientSession, path: str) -> tuple[int, float, bytes]:
    started = time.perf_counter()
    async with session.get(path) as answer:
        body = await answer.read()
    return answer.status, (time.perf_counter() - started) * 1000, body


async def check_pages(session: aiohttp.ClientSession, requests: list[Request], limit: int) -> None:
    """Every page is full, has more after it, and a deep page starts where it should."""
    for request in requests:
        status, _, body = await _get(session, request.path)
        page = orjson.loads(body)
        if status != 200 or len(page.get("data", ())) != limit or not page.get("has_more"):
            raise RuntimeError(f"listing: {request.name} answered {status}: {body[:300]!r}")
        if request.first_id is not None and page["data"][0]["id"] != request.first_id:
            raise RuntimeError(
                f"listing: {request.name} starts at {page['data'][0]['id']}, "
                f"not at {request.first_id}"
            )


async def time_pages(
    session: aiohttp.ClientSession, requests: list[Request], samples: int, warm_up: int
) -> dict[str, int]:
    """``warm_up`` rounds, then ``samples`` timed rounds, each round every request once in
    turn (so a stall of the machine hits every request alike); the answers' statuses."""
    statuses: dict[str, int] = {}
    for round_ in range(warm_up + samples):
        for request in requests:
            status, millis, _ = await _get(session, request.path)
            if round_ >= warm_up:
                request.millis.append(millis)
                statuses[str(status)] = statuses.get(str(status), 0) + 1
    return statuses


def _literal(value: Any) -> str:
    """``value`` as a SQL literal for ``EXECUTE``: a text, a timestamptz, a number, a text[]."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, datetime):
        return _literal(value.isoformat())
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, list):
        return "ARRAY[" + ", ".join(_literal(item) for item in value) + "]::text[]"
    raise TypeError(f"no literal for {value!r}")


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", ()):
        yield from _nodes(child)


def _rows(node: dict[str, Any]) -> float:
    """Rows a node produced (over all its loops), or the planner's estimate if it never ran."""
    loops = node.get("Actual Loops", 0)
    return float(node["Actual Rows"] * loops if loops else node["Plan Rows"])


async def explain(unit: Unit, sql: str, args: list[Any], limit: int) -> dict[str, Any]:
    """The plan PostgreSQL runs ``sql`` with on a connection that prepared it and executed it
    ``PLAN_RUNS`` times, explained with ANALYZE and BUFFERS; which indexes it read, how many
    rows its scans read (kept or filtered out), and what fails it (a Seq Scan of a large
    table, a Sort of more than ``SORT_PAGES`` pages of ``limit`` rows, no index)."""
    values = ", ".join(_literal(arg) for arg in args)
    await unit.execute(f"PREPARE listing_page AS {sql}")
    try:
        for _ in range(PLAN_RUNS):
            await unit.execute(f"EXECUTE listing_page({values})")
        explained = f"EXPLAIN (ANALYZE, BUFFERS{{}}) EXECUTE listing_page({values})"
        text = "\n".join(row[0] for row in await unit.fetch(explained.format("")))
        [tree] = orjson.loads(await unit.fetchval(explained.format(", FORMAT JSON")))
        kinds = await unit.fetchrow(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = $1",
            "listing_page",
        )
    finally:
        await unit.execute("DEALLOCATE listing_page")
    nodes = list(_nodes(tree["Plan"]))
    relations = [n["Relation Name"] for n in nodes if "Relation Name" in n]
    sizes = {
        row["relname"]: float(row["reltuples"])
        for row in await unit.fetch(
            "SELECT relname, reltuples FROM pg_class WHERE relname = ANY($1::text[])", relations
        )
    }
    parents = {
        row["part"]: row["parent"]
        for row in await unit.fetch(
            """SELECT c.relname AS part, p.relname AS parent FROM pg_inherits i
               JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
               WHERE c.relkind = 'i'"""
        )
    }
    indexes: list[str] = []
    problems: list[str] = []
    read = 0.0
    for node in nodes:
        if "Relation Name" in node:
            removed = node.get("Rows Removed by Filter", 0)
            removed += node.get("Rows Removed by Index Recheck", 0)
            read += (node.get("Actual Rows", 0) + removed) * node.get("Actual Loops", 0)
        kind = node["Node Type"]
        name = node.get("Index Name")
        if name and node.get("Actual Loops", 0) > 0:
            index = parents.get(name, name)
            if index not in indexes:
                indexes.append(index)
        if "Seq Scan" in kind and sizes.get(node["Relation Name"], 0) > BIG_TABLE:
            problems.append(f"{kind} on {node['Relation Name']}")
        if kind.endswith("Sort") and any(
            _rows(c) > SORT_PAGES * limit for c in node.get("Plans", ())
        ):
            rows = max(_rows(c) for c in node["Plans"])
            problems.append(f"{kind} of {rows:,.0f} rows")
    if not indexes:
        problems.append("no index read")
    top = tree["Plan"]
    return {
        "indexes": indexes,
        "problems": problems,
        "plan_ok": not problems,
        "plan_kind": "generic" if kinds and kinds["generic_plans"] else "custom",
        "rows_read": round(read),
        "execution_ms": round(tree["Execution Time"], 3),
        "planning_ms": round(tree["Planning Time"], 3),
        "shared_hit": top.get("Shared Hit Blocks", 0),
        "shared_read": top.get("Shared Read Blocks", 0),
        "plan": text,
    }


async def listing(procs: Processes, stores: Stores, admin_url: str, sizes: Sizes) -> dict[str, Any]:
    """Fill a database of its own, start ``svc api`` on it, time every list's first and deep
    page and explain the service's query of each."""
    async with bench_database(admin_url) as url:
        system = ServiceSystem(
            procs,
            replace(stores, database_url=url),
            0,
            "listing",
            scheduler=False,
            api=True,
            label=LABEL,
        )
        try:
            await system.open()
            return await _measure(system, url, sizes)
        finally:
            await system.close()


async def _measure(system: ServiceSystem, url: str, sizes: Sizes) -> dict[str, Any]:
    ctx = system.ctx
    if sizes.days * 86_400 >= ctx.settings.event_retention:
        raise ValueError("SVC_EVENT_RETENTION would drop the listing's older partitions")
    key, scope = await ctx.api_keys.create("test", "listing")
    every = await system.subscribe(scope.org, "https://hooks.shop.example/all", [*EVENT_TYPES])
    second = await system.subscribe(
        scope.org, "https://hooks.shop.example/paid", [*SECOND_ENDPOINT]
    )
    terminals = [(await ctx.terminals.register(scope, f"Till {n}"))[0].id for n in (1, 2)]
    log.info(
        "listing: filling %d events with their attempts and %d payments",
        sizes.events,
        sizes.payments,
    )
    filled = await fill(url, scope, (every, second), terminals, sizes, int(time.time() * 1000))
    log.info("listing: %s", filled)
    await system.start()
    requests = await requests_of(ctx.db, ServiceQueries(scope, every), every, sizes.limit)
    load_before = await wait_for_quiet(QUIET_LOAD, sizes.settle) if sizes.settle else load()
    headers = {"Authorization": f"Bearer {key}"}
    async with aiohttp.ClientSession(
        system.api_url,
        headers=headers,
        connector=aiohttp.TCPConnector(limit=1),
        timeout=aiohttp.ClientTimeout(total=30),
    ) as session:
        await check_pages(session, requests, sizes.limit)
        statuses = await time_pages(session, requests, sizes.samples, sizes.warm_up)
    load_after = load()
    rows = []
    async with ctx.db.connection() as unit:
        for request in requests:
            plan = await explain(unit, request.sql, request.args, sizes.limit)
            millis = request.millis
            rows.append(
                {
                    "request": request.name,
                    "path": request.path,
                    "route": request.route,
                    "rows_before": request.before,
                    "samples": len(millis),
                    "p50_ms": round(percentile(millis, 50), 2),
                    "p99_ms": round(percentile(millis, 99), 2),
                    "max_ms": round(max(millis, default=float("nan")), 2),
                    **plan,
                }
            )
            log.info(
                "listing: %s: p50 %.2f ms, p99 %.2f ms, max %.2f ms; %s plan, indexes %s%s\n%s",
                request.name,
                rows[-1]["p50_ms"],
                rows[-1]["p99_ms"],
                rows[-1]["max_ms"],
                plan["plan_kind"],
                ", ".join(plan["indexes"]) or "none",
                "; FAILS: " + ", ".join(plan["problems"]) if plan["problems"] else "",
                plan["plan"],
            )
    return {
        "system": SYSTEM,
        "label": system.label,
        **filled,
        "limit": sizes.limit,
        "samples": sizes.samples,
        "warm_up_rounds": sizes.warm_up,
        "statuses": statuses,
        "load_average": {"before": load_before, "after": load_after},
        "requests": rows,
    }
