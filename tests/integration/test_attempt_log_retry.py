"""An attempt whose write to the delivery log seemed to fail may have been written: the
reply of a ``COPY`` that PostgreSQL committed can be lost with its connection. Writing it
again must not log the attempt twice."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import pytest

from dispatcher.attempts import Attempts
from dispatcher.delivery import Delivery
from dispatcher.pauses import Pauses
from dispatcher.sender import Result
from svc.context import Context
from svc.errors import Unavailable
from svc.events.model import Attempt, skipped
from svc.ids import new_id


def _delivery() -> Delivery:
    now_ms = int(time.time() * 1000)
    return Delivery(new_id("evt"), "payment.created", "org_1", "test", now_ms, new_id("we"), b"{}")


async def _logged(ctx: Context, delivery: Delivery) -> int:
    query = "SELECT count(*) FROM delivery_attempts WHERE event_id = $1"
    return int(await ctx.db.fetchval(query, delivery.event_id))


@pytest.fixture
def reply_lost_once(ctx: Context, monkeypatch: pytest.MonkeyPatch) -> None:
    """The log's first write commits, then fails as a connection lost before its reply."""
    record = ctx.deliveries.record
    lost = [True]

    async def committed_then_lost(attempts: Sequence[Attempt], *args: Any, **kw: Any) -> Any:
        written = await record(attempts, *args, **kw)
        if lost.pop() if lost else False:
            raise Unavailable("postgres")
        return written

    monkeypatch.setattr(ctx.deliveries, "record", committed_then_lost)


@pytest.mark.usefixtures("reply_lost_once")
async def test_an_attempt_recorded_again_after_a_lost_reply_is_logged_once(ctx: Context) -> None:
    attempts = Attempts(ctx, Pauses(ctx.redis, ctx.keys.endpoint_pauses))
    delivery = _delivery()
    failed = Result("http_error", 503, None, 0.01, "")
    recorded = await attempts.record(delivery, failed)
    assert recorded.retry is not None  # a failed attempt with its next retry
    assert await _logged(ctx, delivery) == 1


@pytest.mark.usefixtures("reply_lost_once")
async def test_a_success_written_in_the_background_after_a_lost_reply_is_logged_once(
    ctx: Context,
) -> None:
    attempts = Attempts(ctx, Pauses(ctx.redis, ctx.keys.endpoint_pauses))
    delivery = _delivery()
    settled: list[BaseException | None] = []
    attempts.record_soon(
        delivery, Result("success", 204, None, 0.01, ""), lambda _, e: settled.append(e)
    )
    for _ in range(100):
        if settled:
            break
        await asyncio.sleep(0.05)
    assert settled == [None]
    assert await _logged(ctx, delivery) == 1


async def test_writing_attempts_again_adds_only_those_not_logged(ctx: Context) -> None:
    now_ms = int(time.time() * 1000)
    made = [_delivery() for _ in range(3)]
    rows = [skipped(d.event_id, d.event_type, d.endpoint_id, 1, "initial", now_ms) for d in made]
    await ctx.deliveries.record(rows[:2])
    await ctx.deliveries.record(rows, again=True)
    assert [await _logged(ctx, d) for d in made] == [1, 1, 1]
    async with ctx.unit() as unit:  # in a transaction of the caller's too
        await ctx.deliveries.record(rows, unit, again=True)
    assert [await _logged(ctx, d) for d in made] == [1, 1, 1]
