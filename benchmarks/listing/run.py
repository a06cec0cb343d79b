"""The listing run as the suite calls it: a database of its own, one ``svc api`` on it, the
fill, the timed pages and their plans."""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import Any

import aiohttp

from benchmarks.listing.fill import SECOND_ENDPOINT, Sizes, fill
from benchmarks.listing.pages import ServiceQueries, check_pages, requests_of, time_pages
from benchmarks.listing.plans import explain
from benchmarks.machine import load, wait_for_quiet
from benchmarks.receipts import percentile
from benchmarks.service import ServiceSystem, Stores
from harness.database import bench_database
from harness.processes import Processes
from svc.envelope import EVENT_TYPES

log = logging.getLogger(__name__)

SYSTEM = "svc-api-listing"
LABEL = "svc, 1 api"
QUIET_LOAD = 1.0
"""Before the timed requests: wait (``Sizes.settle`` seconds at most) for a 1-minute load
average below this, the fill's own load having passed."""


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
