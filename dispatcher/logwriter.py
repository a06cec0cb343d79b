"""Group commit for the delivery log: attempts finished together are written in one command.

Each caller waits until its own record is in Redis, so a job is still acked only after its
outcome is recorded; the batching just shares the round trip among concurrent deliveries.
"""

from __future__ import annotations

import asyncio

from svc.store.deliveries import Attempt, DeliveryLog


GATHER = 0.005


class LogWriter:
    """Batches attempts into ``DeliveryLog.record`` calls."""

    def __init__(self, log: DeliveryLog) -> None:
        self._log = log
        self._pending: list[tuple[Attempt, asyncio.Future[None]]] = []
        self._flusher: asyncio.Task[None] | None = None

    async def record(self, attempt: Attempt) -> None:
        """Write ``attempt``; returns once it is stored, raises if Redis failed."""
        future = asyncio.get_running_loop().create_future()
        self._pending.append((attempt, future))
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush())
        await future

    async def _flush(self) -> None:
        try:
            while self._pending:
                # Gathering for a few milliseconds makes batches several times larger under
                # load; it delays only the ack, never the delivery.
                await asyncio.sleep(GATHER)
                batch, self._pending = self._pending, []
                try:
                    await self._log.record([attempt for attempt, _ in batch])
                except Exception as exc:
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                else:
                    for _, future in batch:
                        if not future.done():
                            future.set_result(None)
        finally:
            self._flusher = None
