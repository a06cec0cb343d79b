"""Group commit: calls that arrive while a batch gathers share one round trip.

Each caller still waits for its own result, so nothing is acknowledged before it is done;
the batching only shares the cost of the call among concurrent callers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Batcher(Generic[T, R]):
    """Runs ``run(items)`` for batches of submitted items; ``run`` returns one result each."""

    def __init__(self, run: Callable[[list[T]], Awaitable[Sequence[R]]], gather: float) -> None:
        self._run = run
        self._gather = gather
        self._pending: list[tuple[T, asyncio.Future[R]]] = []
        self._flusher: asyncio.Task[None] | None = None

    async def submit(self, item: T) -> R:
        """``item``'s result once its batch ran; raises what the batch raised."""
        return await self.submit_soon(item)

    def submit_soon(self, item: T) -> asyncio.Future[R]:
        """A future of ``item``'s result, for a caller that goes on with other work (and
        learns the outcome through a done-callback) instead of waiting for the batch."""
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush())
        return future

    async def submit_all(self, items: Sequence[T]) -> list[R]:
        """Each item's result once its batch ran (they go into one batch); raises what the
        batch raised."""
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future[R]] = [loop.create_future() for _ in items]
        self._pending.extend(zip(items, futures, strict=True))
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush())
        return [await future for future in futures]

    async def _flush(self) -> None:
        try:
            while self._pending:
                await asyncio.sleep(self._gather)
                batch, self._pending = self._pending, []
                try:
                    results = await self._run([item for item, _ in batch])
                except Exception as exc:
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                else:
                    for (_, future), result in zip(batch, results, strict=True):
                        if not future.done():
                            future.set_result(result)
        finally:
            self._flusher = None
