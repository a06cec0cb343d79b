"""Group commit: concurrent submissions share one call; each caller gets its own result."""

from __future__ import annotations

import asyncio

import pytest

from svc.group_commit import Batcher


async def test_concurrent_items_share_one_call() -> None:
    calls: list[list[int]] = []

    async def run(items: list[int]) -> list[int]:
        calls.append(items)
        return [i * 10 for i in items]

    batcher = Batcher(run, 0.001)
    results = await asyncio.gather(*(batcher.submit(i) for i in range(5)))
    assert results == [0, 10, 20, 30, 40]
    assert calls == [[0, 1, 2, 3, 4]]
    assert await batcher.submit(7) == 70
    assert calls[-1] == [7]


async def test_a_failed_batch_fails_each_caller() -> None:
    async def run(items: list[int]) -> list[int]:
        raise ConnectionError("redis went away")

    batcher = Batcher(run, 0)
    outcomes = await asyncio.gather(batcher.submit(1), batcher.submit(2), return_exceptions=True)
    assert all(isinstance(o, ConnectionError) for o in outcomes)
    with pytest.raises(ConnectionError):
        await batcher.submit(3)


async def test_an_item_submitted_soon_shares_the_batch_and_reports_through_its_future() -> None:
    calls: list[list[int]] = []

    async def run(items: list[int]) -> list[int]:
        calls.append(items)
        return [i * 10 for i in items]

    batcher = Batcher(run, 0.001)
    told: list[int] = []
    batcher.submit_soon(1).add_done_callback(lambda future: told.append(future.result()))
    assert await batcher.submit(2) == 20
    assert told == [10]
    assert calls == [[1, 2]]
