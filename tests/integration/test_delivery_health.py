"""An endpoint's delivery health: the hourly aggregate the log's trigger keeps, read per hour."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

from svc.context import Context
from svc.db.partitions import drop_expired
from svc.events.model import HOUR_MS, Attempt, Hour
from svc.ids import new_id


def _attempt(endpoint_id: str, attempted_ms: int, outcome: str) -> Attempt:
    return Attempt(
        id=new_id("att"),
        event_id=new_id("evt"),
        event_type="payment.created",
        endpoint_id=endpoint_id,
        attempt=1,
        trigger="event",
        outcome=outcome,
        status_code=204 if outcome == "success" else 503,
        error=None,
        duration_ms=3.0,
        response_body="",
        attempted_ms=attempted_ms,
        next_attempt_ms=None,
    )


async def test_each_batch_adds_its_outcomes_to_its_endpoint_and_hour(ctx: Context) -> None:
    now = int(time.time() * 1000)
    current = now - now % HOUR_MS
    earlier = current - 3 * HOUR_MS + 120_000
    batch = [
        _attempt("we_health_a", now, "success"),
        _attempt("we_health_a", now, "timeout"),
        _attempt("we_health_a", earlier, "success"),
        _attempt("we_health_b", now, "http_error"),
    ]
    await ctx.deliveries.record(batch)
    await ctx.deliveries.record([_attempt("we_health_a", now, "success")])
    hours = await ctx.deliveries.hourly("we_health_a", now)
    assert len(hours) == 24
    assert hours[-1] == Hour(current, 2, 1)
    assert hours[-4] == Hour(current - 3 * HOUR_MS, 1, 0)
    assert sum(h.succeeded + h.failed for h in hours) == 4
    assert [h.start_ms for h in hours] == list(range(current - 23 * HOUR_MS, current + 1, HOUR_MS))
    assert (await ctx.deliveries.hourly("we_health_b", now))[-1] == Hour(current, 0, 1)
    assert await ctx.deliveries.hourly("we_health_none", now) == [
        Hour(h.start_ms, 0, 0) for h in hours
    ]


async def test_batches_written_at_once_are_all_counted(ctx: Context) -> None:
    now = int(time.time() * 1000)
    endpoints = [f"we_health_c{n}" for n in range(4)]

    async def write(offset: int) -> None:
        # Endpoints in a different order in each batch: rows are locked in key order anyway.
        order = endpoints[offset:] + endpoints[:offset]
        for _ in range(10):
            await ctx.deliveries.record(
                [_attempt(e, now, "success" if n % 3 else "timeout") for n, e in enumerate(order)]
            )

    await asyncio.gather(*(write(offset) for offset in range(4)))
    totals = [await ctx.deliveries.hourly(e, now) for e in endpoints]
    assert [sum(h.succeeded + h.failed for h in hours) for hours in totals] == [40] * 4
    # Two of each batch's four failed (n = 0 and n = 3).
    assert sum(h.failed for hours in totals for h in hours) == 80


async def test_the_hours_go_with_the_log_s_retention(ctx: Context) -> None:
    now = int(time.time() * 1000)
    old = now - 3 * HOUR_MS  # today or yesterday: both days have their partitions
    await ctx.deliveries.record([_attempt("we_health_old", old, "success")])
    await ctx.deliveries.record([_attempt("we_health_old", now, "success")])
    stored = "SELECT count(*) FROM endpoint_hourly_outcomes WHERE endpoint_id = 'we_health_old'"
    assert await ctx.db.fetchval(stored) == 2
    # With two hours of retention, the older hour goes; the current one stays.
    later = datetime.fromtimestamp(now / 1000, tz=UTC) + timedelta(minutes=1)
    async with ctx.db.transaction() as unit:
        await drop_expired(unit, 2 * 3600, now=later)
    assert await ctx.db.fetchval(stored) == 1
