"""The listing run: the first page and a page deep in each of the API's lists over one large
scope (``benchmarks.listing.fill``), timed over HTTP, and the plan of each page's query (the
service's own, recorded from its store) as a pool connection runs it."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from typing import Any, cast

import aiohttp
import orjson

from benchmarks.figures import fmt
from benchmarks.listing.fill import RARE_TYPE, SECOND_ENDPOINT, STATUS, TYPE, Sizes, fill
from benchmarks.machine import wait_for_quiet
from benchmarks.receipts import percentile
from benchmarks.sections import table
from benchmarks.service import ServiceSystem, Stores
from harness.database import bench_database
from harness.processes import Processes
from svc import cursors
from svc.db import Database, Unit
from svc.db.times import to_ms
from svc.envelope import EVENT_TYPES
from svc.events.model import LogFilter
from svc.events.store.deliveries import DeliveryLog
from svc.events.store.events import Events
from svc.events.store.log_search import log_cursor
from svc.orgs import Scope
from svc.payments.store import PaymentFilters, Payments

log = logging.getLogger(__name__)

SORT_PAGES = 10
BIG_TABLE = 10_000
PLAN_RUNS = 8  # executions before the explain: past the five custom plans
QUIET_LOAD = 1.0  # the 1-minute load average the timed requests wait for
LOG = "/v1/webhook_endpoints/{id}/deliveries?"
LISTS: dict[str, tuple[str, LogFilter | None]] = {  # each list's route, its log search if any
    "events": ("/v1/events?", None),
    "events of a type": (f"/v1/events?type={TYPE}&", None),
    "events of a rare type": (f"/v1/events?type={RARE_TYPE}&", None),
    "payments of a status": (f"/v1/payments?status={STATUS}&", None),
    "endpoint's delivery log": (LOG, LogFilter()),
    "endpoint's 5xx deliveries": (f"{LOG}status_code=5xx&", LogFilter(status_class=5)),
    "scope's delivery log": ("/v1/deliveries?", LogFilter()),
    "scope's failed deliveries of a type": (
        f"/v1/deliveries?outcome=http_error&event_type={TYPE}&",
        LogFilter(outcome="http_error", event_type=TYPE),
    ),
}


Page = tuple[dict[str, Any], str, str | None]  # its row, its path, the id it must start with


class _Recorder:
    """Stands in for the stores' database: keeps the last query and its arguments."""

    async def fetch(self, query: str, *args: Any) -> list[Any]:
        self.last = (query, list(args))
        return []


async def service_query(
    scope: Scope, endpoint_id: str, kind: str, limit: int, cursor: str | None
) -> tuple[str, list[Any]]:
    """The query and arguments of one page of list ``kind``, as its route calls the store."""
    recorder = _Recorder()
    db, search = cast(Database, recorder), LISTS[kind][1] or LogFilter()
    if kind == "payments of a status":
        await Payments(db).page(scope, limit, cursor, PaymentFilters(status=STATUS))
    elif kind.startswith("endpoint's"):
        await DeliveryLog(db).for_endpoint(endpoint_id, limit, cursor, search)
    elif kind.startswith("scope's"):
        await DeliveryLog(db).for_scope(scope, limit, cursor, search)
    else:
        types = {"events": [], "events of a type": [TYPE]}.get(kind, [RARE_TYPE])
        await Events(db).listed(scope, types, None, None, limit, cursor)
    return recorder.last


async def pages_of(unit: Unit, scope: Scope, endpoint: str, limit: int) -> list[Page]:
    """The first and a deep page (after the middle row) of every list, with their plans."""
    found = []
    for kind, (template, search) in LISTS.items():
        route = f"{template}limit={limit}"
        sql, args = await service_query(scope, endpoint, kind, 10**9, None)
        deep = int(await unit.fetchval(f"SELECT count(*) FROM ({sql}) AS listed", *args)) // 2
        if deep < 1:
            raise RuntimeError(f"listing: the {kind} list is empty")
        query = f"SELECT * FROM ({sql}) AS listed OFFSET {deep - 1} LIMIT 2"
        last, first = await unit.fetch(query, *args)
        if search is not None:
            cursor = log_cursor(to_ms(last["attempted_at"]), last["id"], search)
        else:
            cursor = cursors.encode(to_ms(last["created_at"]), last["id"])
        for name, before, after in [
            ("first page", 0, None),
            (f"page after {deep:,} rows", deep, cursor),
        ]:
            sql, args = await service_query(scope, endpoint, kind, limit, after)
            row = {
                "request": f"{kind}, {name}",
                "route": route if after is None else route + "&cursor={cursor}",
                "rows_before": before,
                **await explain(unit, sql, args, limit),
            }
            path = route.format(id=endpoint) + ("" if after is None else f"&cursor={after}")
            found.append((row, path, None if after is None else first["id"]))
    return found


def _literal(value: Any) -> str:
    """``value`` as a SQL literal for ``EXECUTE``: a text, a timestamptz, a number, a text[]."""
    if isinstance(value, int):
        return str(value)
    if isinstance(value, datetime):
        return _literal(value.isoformat())
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, list):
        return "ARRAY[" + ", ".join(map(_literal, value)) + "]::text[]"
    raise TypeError(f"no literal for {value!r}")


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", ()):
        yield from _nodes(child)


def _rows(node: dict[str, Any]) -> float:
    """Rows a node produced over all its loops, or the planner's estimate if it never ran."""
    loops = node.get("Actual Loops", 0)
    return float(node["Actual Rows"] * loops if loops else node["Plan Rows"])


async def explain(unit: Unit, sql: str, args: list[Any], limit: int) -> dict[str, Any]:
    """What fails the plan of ``sql`` on a connection that prepared it and executed it
    ``PLAN_RUNS`` times: a Seq Scan of a big table, a big Sort, no index read."""
    values = ", ".join(map(_literal, args))
    await unit.execute(f"PREPARE listing_page AS {sql}")
    try:
        for _ in range(PLAN_RUNS):
            await unit.execute(f"EXECUTE listing_page({values})")
        explained = f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE listing_page({values})"
        [tree] = orjson.loads(await unit.fetchval(explained))
    finally:
        await unit.execute("DEALLOCATE listing_page")
    sizes = dict(await unit.fetch("SELECT relname, reltuples FROM pg_class WHERE relkind = 'r'"))
    problems: list[str] = []
    indexed = False
    for node in _nodes(tree["Plan"]):
        kind = node["Node Type"]
        indexed |= "Index Name" in node and node.get("Actual Loops", 0) > 0
        if "Seq Scan" in kind and sizes.get(node["Relation Name"], 0) > BIG_TABLE:
            problems.append(f"{kind} on {node['Relation Name']}")
        sorted_rows = max((_rows(c) for c in node.get("Plans", ())), default=0)
        if kind.endswith("Sort") and sorted_rows > SORT_PAGES * limit:
            problems.append(f"{kind} of {sorted_rows:,.0f} rows")
    if not indexed:
        problems.append("no index read")
    return {"problems": problems, "plan_ok": not problems}


async def _time_pages(session: aiohttp.ClientSession, pages: list[Page], sizes: Sizes) -> None:
    """Each page's p99 over ``samples`` rounds after ``warm_up`` more, each round every request
    once in turn (a stall hits all alike); every page must be full, have more after it and, if
    deep, start where it should."""
    millis: list[list[float]] = [[] for _ in pages]
    for _ in range(sizes.warm_up + sizes.samples):
        for (row, path, first_id), times in zip(pages, millis, strict=True):
            started = time.perf_counter()
            async with session.get(path) as answer:
                body = await answer.read()
            times.append((time.perf_counter() - started) * 1000)
            page = orjson.loads(body) if answer.status == 200 else {}
            data = page.get("data", [])
            full = len(data) == sizes.limit and page.get("has_more")
            if not full or first_id not in (None, data[0]["id"]):
                raise RuntimeError(
                    f"listing: {row['request']} answered {answer.status}: {body[:300]!r}"
                )
    for (row, _, _), times in zip(pages, millis, strict=True):
        row["p99_ms"] = round(percentile(times[sizes.warm_up :], 99), 2)


async def listing(procs: Processes, stores: Stores, admin_url: str, sizes: Sizes) -> dict[str, Any]:
    """Fill a database of its own, start ``svc api`` on it, explain and time every page."""
    async with bench_database(admin_url) as url:
        stores = replace(stores, database_url=url)
        system = ServiceSystem(procs, stores, 0, "listing", scheduler=False, api=True)
        async with system.opened():
            ctx = system.ctx
            if sizes.days * 86_400 >= ctx.settings.event_retention:
                raise ValueError("SVC_EVENT_RETENTION would drop the listing's older partitions")
            key, scope = await ctx.api_keys.create("test", "listing")
            hooks = "https://hooks.shop.example"
            every = await system.subscribe(scope.org, f"{hooks}/all", [*EVENT_TYPES])
            second = await system.subscribe(scope.org, f"{hooks}/paid", [*SECOND_ENDPOINT])
            terminals = [(await ctx.terminals.register(scope, f"Till {n}"))[0].id for n in (1, 2)]
            filled = await fill(url, scope, (every, second), terminals, sizes)
            log.info("listing: %s", filled)
            await system.start()
            async with ctx.db.connection() as unit:
                pages = await pages_of(unit, scope, every, sizes.limit)
            await wait_for_quiet(QUIET_LOAD, sizes.settle)
            async with aiohttp.ClientSession(
                system.api_url,
                headers={"Authorization": f"Bearer {key}"},
                connector=aiohttp.TCPConnector(limit=1),
                timeout=aiohttp.ClientTimeout(total=30),
            ) as session:
                await _time_pages(session, pages, sizes)
    return {
        **filled,
        "limit": sizes.limit,
        "samples": sizes.samples,
        "requests": [row for row, _, _ in pages],
    }


def listing_table(result: dict[str, Any] | None) -> list[str]:
    """The listing's part of the results: each page's p99 and the plan of its query."""
    if not result:
        return []
    rows = [
        [f"`{page['route']}`", fmt(page["rows_before"]), fmt(page["p99_ms"], 1)]
        + [", ".join(page["problems"]) or "ok"]
        for page in result["requests"]
    ]
    return [
        "",
        f"**Listing pages**: one `svc api` process, one request at a time, over "
        f"{fmt(result['events'])} events with {fmt(result['delivery_attempts'])} delivery "
        f"attempts and {fmt(result['payments'])} payments of one scope; pages of "
        f"{result['limit']}, each request {fmt(result['samples'])} times.",
        "",
        *table("request | rows before it | p99 ms | plan", rows),
    ]
