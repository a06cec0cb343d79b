"""Fan-out in the dispatcher: each event is delivered to its subscribers in this process.

Subscribers come from the in-process endpoint cache. The event is acked once every delivery
it carries is settled: recorded (a failed one handed to the ladder with a broker confirm) or,
for a delivery still in flight after ``SVC_HANDOFF_AFTER``, handed off as a job of its own
with a broker confirm. One slow endpoint never holds an event that other endpoints are
waiting for: the handler settles its message early and lets the slow delivery run on. Each
delivery starts once it has a credit of the fan-out's budget (``dispatcher.budget``), events
taking theirs in arrival order, so a wide event's deliveries start as credits come back
rather than piling up past the connections there are. A message the service cannot accept
goes to the rejected queue (``dispatcher.intake``).
"""

from __future__ import annotations

import asyncio
import logging
import time

from dispatcher.budget import Budget
from dispatcher.endpoints import Target
from dispatcher.intake import Intake
from dispatcher.ordered import Lanes
from dispatcher.worker import Worker
from svc.amqp.acks import Acks
from svc.amqp.delivery_jobs import DeliveryJob
from svc.amqp.received import Received
from svc.context import Context
from svc.errors import Rejected
from svc.tracing import TRACEPARENT

log = logging.getLogger(__name__)


class _Event:
    """An event message and how many of its deliveries are not settled yet."""

    __slots__ = ("message", "unsettled")

    def __init__(self, message: Received, unsettled: int) -> None:
        self.message = message
        self.unsettled = unsettled


class _Delivery:
    __slots__ = ("event", "job", "owes", "settled")

    def __init__(self, event: _Event, job: DeliveryJob) -> None:
        self.event = event
        self.job = job
        self.settled = False
        self.owes = True
        """Its credit of the budget is not given back yet."""


class FanOut:
    """Handler of the fan-out queue; ``acks`` settles its messages (see ``svc.amqp.consuming``)."""

    def __init__(self, ctx: Context, worker: Worker, lanes: Lanes) -> None:
        self._ctx = ctx
        self._worker = worker
        self._lanes = lanes
        self._intake = Intake(ctx)
        self._handoff_after = ctx.settings.handoff_after
        self._initial = ctx.metrics.jobs.labels("initial")
        self.acks = Acks.for_prefetch(ctx.settings.dispatcher_concurrency)
        self._budget = Budget(ctx.settings.dispatcher_concurrency)
        self._handing: set[asyncio.Task[None]] = set()
        self._traced = ctx.tracing.enabled
        self._waited = ctx.metrics.event_wait

    async def handle(self, message: Received) -> None:
        taken = time.time()
        try:
            stored = await self._intake.accept(message)
        except Rejected as rejected:
            await self._intake.reject(message, rejected)
            return
        self._waited.observe(max(0.0, taken - stored.event.created_ms / 1000))
        if not message.headers.get("svc-stored"):  # its deliveries carry the stored time
            stored = await self._ctx.events.store_if_absent(stored, int(time.time() * 1000))
        event = stored.event
        targets = await self._worker.cache.subscribers(stored.org, event.environment, event.type)
        if not targets:
            return
        pending = _Event(message, len(targets))
        trace = _traceparent(message) if self._traced else ""
        self._initial.inc(len(targets))
        budget = self._budget
        if len(targets) == 1:
            async with budget.turn():
                await budget.one()
            job = DeliveryJob.of(event, stored.org, targets[0].id, traceparent=trace)
            await self._deliver(_Delivery(pending, job), targets[0])
            return
        # Each delivery is made and started once its credit is taken (jobs are stamped then):
        # a wide event's first deliveries run while the rest wait for credits.
        deliveries: list[_Delivery] = []
        tasks: list[asyncio.Task[None]] = []
        try:
            async with budget.turn():
                for target in targets:
                    await budget.one()
                    job = DeliveryJob.of(event, stored.org, target.id, traceparent=trace)
                    deliveries.append(_Delivery(pending, job))
                    tasks.append(asyncio.create_task(self._deliver(deliveries[-1], target)))
            await asyncio.gather(*tasks)
        except asyncio.CancelledError:
            # At shutdown: the started deliveries are cut off and give their credits back.
            for task in tasks:
                task.cancel()
            for delivery in deliveries:
                self._give_back(delivery)
            raise

    async def _deliver(self, delivery: _Delivery, target: Target) -> None:
        try:
            await self._send(delivery, target)
        finally:
            self._give_back(delivery)  # settled, or failed and its event goes back

    async def _send(self, delivery: _Delivery, target: Target) -> None:
        job = delivery.job
        if target.ordered:  # its lane sends it when its turn comes
            await self._lanes.enqueue(job)
            self._settle(delivery)
            return
        slow = asyncio.get_running_loop().call_later(self._handoff_after, self._hand_off, delivery)
        try:
            await self._worker.deliver(job, target)
        except Exception as exc:
            if not delivery.settled:
                raise  # the event goes back to its queue
            log.warning("a handed-off delivery failed (its hand-off job sends it): %s", exc)
        finally:
            slow.cancel()
        self._settle(delivery)

    def _hand_off(self, delivery: _Delivery) -> None:
        """Slow: a job of its own stands in for the delivery, and the event need not wait."""
        task = asyncio.create_task(self._handed_off(delivery))
        self._handing.add(task)
        task.add_done_callback(self._handing.discard)

    async def _handed_off(self, delivery: _Delivery) -> None:
        try:
            await self._worker.hand_off(delivery.job)
        except Exception as exc:  # the event waits for the delivery itself instead
            log.warning("hand-off of a slow delivery not confirmed: %s", exc)
            return
        self._settle(delivery)

    def _give_back(self, delivery: _Delivery) -> None:
        if delivery.owes:
            delivery.owes = False
            self._budget.give()

    def _settle(self, delivery: _Delivery) -> None:
        if delivery.settled:
            return
        delivery.settled = True
        self._give_back(delivery)  # a handed-off delivery runs on outside the budget
        event = delivery.event
        event.unsettled -= 1
        if event.unsettled == 0:
            self.acks.finished(event.message)

    async def drain(self) -> None:
        """At shutdown, after the consumers stopped: hand-offs still publishing are cut off
        (their events were not acked, so they go back to the queue)."""
        for task in list(self._handing):
            task.cancel()
        if self._handing:
            await asyncio.wait(set(self._handing))


def _traceparent(message: Received) -> str:
    value = message.headers.get(TRACEPARENT)
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    return value if isinstance(value, str) else ""
