"""Fan-out in the dispatcher: each event is delivered to its subscribers in this process.

Subscribers come from the in-process endpoint cache. The event is acked once every delivery
it carries is recorded (a failed one handed to the ladder with a broker confirm) or, for a
delivery still in flight after ``SVC_HANDOFF_AFTER``, handed off as a job of its own: one
slow endpoint never holds an event that other endpoints are waiting for. A message the
service cannot accept goes to the rejected queue (``svc.events.intake``).
"""

from __future__ import annotations

import asyncio
import logging
import time

from aio_pika.abc import AbstractIncomingMessage

from dispatcher.endpoints import Target
from dispatcher.worker import Worker
from svc.context import Context
from svc.errors import Rejected
from svc.events.intake import Intake
from svc.jobs import DeliveryJob

log = logging.getLogger(__name__)


class FanOut:
    """Handler of the fan-out queue."""

    def __init__(self, ctx: Context, worker: Worker) -> None:
        self._ctx = ctx
        self._worker = worker
        self._intake = Intake(ctx)
        self._handoff_after = ctx.settings.handoff_after
        self._initial = ctx.metrics.jobs.labels("initial")
        self.detached: set[asyncio.Task[None]] = set()

    async def handle(self, message: AbstractIncomingMessage) -> None:
        try:
            stored = await self._intake.accept(message)
        except Rejected as rejected:
            await self._intake.reject(message, rejected)
            return
        if not message.headers.get("svc-stored"):
            await self._ctx.events.store_if_absent(stored, int(time.time() * 1000))
        event = stored.event
        targets = await self._worker.cache.subscribers(stored.org, event.environment, event.type)
        if not targets:
            return
        self._initial.inc(len(targets))
        if len(targets) == 1:
            await self._deliver(DeliveryJob.of(event, stored.org, targets[0].id), targets[0])
        else:
            await asyncio.gather(
                *(self._deliver(DeliveryJob.of(event, stored.org, t.id), t) for t in targets)
            )

    async def _deliver(self, job: DeliveryJob, target: Target) -> None:
        task = asyncio.ensure_future(self._worker.deliver(job, target))
        try:
            done, _ = await asyncio.wait((task,), timeout=self._handoff_after)
        except asyncio.CancelledError:  # the event goes back to its queue: so does this
            task.cancel()
            raise
        if done:
            task.result()  # raises: the event goes back to its queue
            return
        # Slow: a job of its own stands in for it, and the event need not wait.
        await self._worker.hand_off(job)
        self.detached.add(task)
        task.add_done_callback(self._settled)

    def _settled(self, task: asyncio.Task[None]) -> None:
        self.detached.discard(task)
        if not task.cancelled() and task.exception() is not None:
            # Its hand-off job delivers it instead.
            log.warning("a handed-off delivery failed: %s", task.exception())

    async def drain(self, grace: float) -> None:
        """At shutdown: let detached deliveries finish; their hand-off jobs cover the rest."""
        if not self.detached:
            return
        _, pending = await asyncio.wait(set(self.detached), timeout=grace)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)
