"""Optimistic Redis transactions: WATCH, read, decide, MULTI/EXEC, retried on conflict."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline
from redis.exceptions import WatchError

T = TypeVar("T")

MAX_ATTEMPTS = 100


class Conflict(RuntimeError):
    """The watched keys kept changing; the caller may report a temporary failure."""


async def transact(redis: Redis, watch: list[str], body: Callable[[Pipeline], Awaitable[T]]) -> T:
    """Run ``body`` under WATCH of ``watch`` until its transaction commits.

    ``body`` reads with the pipeline in immediate mode, then either calls ``pipe.multi()``
    and queues its writes (they commit only if no watched key changed, else ``body`` runs
    again) or returns without writing.
    """
    async with redis.pipeline(transaction=True) as pipe:
        for _ in range(MAX_ATTEMPTS):
            try:
                await pipe.watch(*watch)
                result = await body(pipe)
                if pipe.explicit_transaction:
                    await pipe.execute()
                return result
            except WatchError:
                continue
            finally:
                await pipe.reset()  # type: ignore[no-untyped-call]
    raise Conflict(f"gave up after {MAX_ATTEMPTS} conflicting attempts on {watch}")
