"""The listing run's requests: the first and a deep page of every list, the service's own
query of each (recorded from its stores), and their timing over HTTP."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, cast

import aiohttp
import orjson

from benchmarks.listing.fill import RARE_TYPE, STATUS, TYPE
from svc import cursors
from svc.db import Database
from svc.db.times import to_ms
from svc.events.deliveries import DeliveryLog
from svc.events.store import Events
from svc.orgs import Scope
from svc.payments.store import PaymentFilters, Payments

log = logging.getLogger(__name__)

LISTS = (
    "events",
    "events of a type",
    "events of a rare type",
    "payments of a status",
    "endpoint's delivery log",
)


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
