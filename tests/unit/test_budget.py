"""The fan-out's delivery budget: a credit per delivery, events in order, a small start."""

from __future__ import annotations

import asyncio

import pytest

from dispatcher.budget import Budget


async def _take(
    budget: Budget, count: int, started: list[str] | None = None, name: str = ""
) -> None:
    """An event of ``count`` deliveries taking its credits, noting each start in ``started``."""
    async with budget.turn():
        for number in range(count):
            await budget.one()
            if started is not None:
                started.append(f"{name}{number}")


async def test_credits_are_taken_at_once_while_free() -> None:
    budget = Budget(10)
    await _take(budget, 4)
    await _take(budget, 6)
    assert budget.free == 0


async def test_a_wide_event_starts_what_fits_and_the_rest_one_per_credit_back() -> None:
    budget = Budget(10)
    await _take(budget, 8)
    started: list[str] = []
    wide = asyncio.create_task(_take(budget, 5, started, "w"))
    await asyncio.sleep(0)
    assert started == ["w0", "w1"]  # two credits were free: two deliveries run already
    budget.give()
    await asyncio.sleep(0)
    assert started == ["w0", "w1", "w2"]
    budget.give(2)
    await asyncio.wait_for(wide, 1)
    assert started == ["w0", "w1", "w2", "w3", "w4"] and budget.free == 0


async def test_events_take_their_credits_in_arrival_order() -> None:
    budget = Budget(10)
    await _take(budget, 10)
    started: list[str] = []
    wide = asyncio.create_task(_take(budget, 3, started, "wide"))
    await asyncio.sleep(0)
    narrow = asyncio.create_task(_take(budget, 1, started, "narrow"))
    await asyncio.sleep(0)
    budget.give(2)  # room for the narrow one, but the wide one came first
    await asyncio.sleep(0)
    assert started == ["wide0", "wide1"]
    budget.give(2)
    await asyncio.wait_for(asyncio.gather(wide, narrow), 1)
    assert started == ["wide0", "wide1", "wide2", "narrow0"]


async def test_an_event_wider_than_the_budget_goes_on_as_its_own_deliveries_settle() -> None:
    budget = Budget(10)
    started: list[str] = []
    wide = asyncio.create_task(_take(budget, 25, started))
    await asyncio.sleep(0)
    assert len(started) == 10 and budget.free == 0
    for _ in range(15):
        budget.give()
        await asyncio.sleep(0)
    await asyncio.wait_for(wide, 1)
    assert len(started) == 25
    budget.give(10)
    assert budget.free == 10


async def test_a_cancelled_waiter_takes_no_credit_and_lets_the_next_event_in() -> None:
    budget = Budget(10)
    await _take(budget, 10)
    first = asyncio.create_task(_take(budget, 1))
    await asyncio.sleep(0)
    second = asyncio.create_task(_take(budget, 1))
    await asyncio.sleep(0)
    budget.give()  # wakes the first, which is cancelled before it takes the credit
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    await asyncio.wait_for(second, 1)
    assert budget.free == 0


async def test_a_fresh_budget_starts_small_and_grows_as_deliveries_settle() -> None:
    budget = Budget(100, first=10)
    await _take(budget, 10)
    started: list[str] = []
    waiting = asyncio.create_task(_take(budget, 15, started))
    await asyncio.sleep(0)
    assert started == []  # 15 fit the budget, not yet its start
    budget.give(10)  # 10 settled: 20 credits now, all free
    await asyncio.wait_for(waiting, 1)
    assert (budget.limit, budget.free) == (20, 5)
    budget.give(15)
    budget.give(200)  # never past the whole budget
    assert budget.limit == 100
