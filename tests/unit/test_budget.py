"""The fan-out's delivery budget: events in order, room for wide ones, a small start."""

from __future__ import annotations

import asyncio

import pytest

from dispatcher.budget import Budget


async def test_an_event_that_fits_starts_at_once() -> None:
    budget = Budget(10)
    await budget.take(4)
    await budget.take(6)
    assert budget.free == 0


async def test_an_event_waits_until_its_deliveries_fit() -> None:
    budget = Budget(10)
    await budget.take(8)
    waiting = asyncio.create_task(budget.take(5))
    await asyncio.sleep(0)
    assert not waiting.done()
    budget.give(2)
    await asyncio.sleep(0)
    assert not waiting.done()  # 4 free, 5 needed
    budget.give()
    await asyncio.wait_for(waiting, 1)
    assert budget.free == 0


async def test_events_start_in_arrival_order() -> None:
    budget = Budget(10)
    await budget.take(10)
    started: list[str] = []

    async def event(name: str, width: int) -> None:
        await budget.take(width)
        started.append(name)

    wide = asyncio.create_task(event("wide", 8))
    await asyncio.sleep(0)
    narrow = asyncio.create_task(event("narrow", 1))
    await asyncio.sleep(0)
    budget.give(2)  # room for the narrow one, but the wide one came first
    await asyncio.sleep(0)
    assert started == []
    budget.give(8)
    await asyncio.wait_for(asyncio.gather(wide, narrow), 1)
    assert started == ["wide", "narrow"]


async def test_an_event_wider_than_the_budget_waits_for_all_of_it() -> None:
    budget = Budget(10)
    await budget.take(1)
    wide = asyncio.create_task(budget.take(100))
    await asyncio.sleep(0)
    assert not wide.done()
    budget.give()
    await asyncio.wait_for(wide, 1)
    assert budget.free == -90  # its deliveries give back 100 as they settle
    budget.give(100)
    assert budget.free == 10


async def test_a_waiter_cancelled_lets_the_next_one_in() -> None:
    budget = Budget(10)
    await budget.take(5)
    first = asyncio.create_task(budget.take(10))
    await asyncio.sleep(0)
    second = asyncio.create_task(budget.take(5))
    await asyncio.sleep(0)
    assert not second.done()
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    await asyncio.wait_for(second, 1)
    assert budget.free == 0


async def test_a_waiter_cancelled_as_it_was_granted_gives_its_credits_back() -> None:
    budget = Budget(10)
    await budget.take(10)
    waiting = asyncio.create_task(budget.take(4))
    await asyncio.sleep(0)
    budget.give(10)  # grants the waiter: its future is done, its task not yet resumed
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert budget.free == 10


async def test_a_fresh_budget_starts_small_and_grows_as_deliveries_settle() -> None:
    budget = Budget(100, first=10)
    await budget.take(10)
    waiting = asyncio.create_task(budget.take(15))
    await asyncio.sleep(0)
    assert not waiting.done()  # 15 fit the budget, not yet its start
    budget.give(10)  # 10 settled: 20 credits now, all free
    await asyncio.wait_for(waiting, 1)
    assert (budget.limit, budget.free) == (20, 5)
    budget.give(15)
    budget.give(200)  # never past the whole budget
    assert budget.limit == 100
