"""Ordered delivery in the dispatcher: one lane per ordered endpoint, one delivery at a time.

The fan-out queues an ordered endpoint's deliveries in PostgreSQL (``svc.events.store.ordered``)
instead of sending them, and the event is settled once they are queued. Every dispatcher
claims lanes with work and no live owner; a lane sends its head, retries it on the ladder's
schedule (waiting in place: nothing behind it may overtake it) until it succeeds or is
exhausted, then moves on. Other endpoints never wait for a lane.

A lane is a source of the delivery engine (``dispatcher.engine``) like the fan-out: it waits
in place for the engine's word on pauses and rate limits (``Deliverer.hold``) and has each
attempt sent and recorded by it (``Deliverer.attempt``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid

from dispatcher.delivery import Delivery
from dispatcher.endpoints import EndpointCache, Target
from dispatcher.engine import Deliverer
from svc.context import Context
from svc.events.model import Head, Waiting
from svc.events.store.ordered import OrderedLanes
from svc.group_commit import Batcher

log = logging.getLogger(__name__)

LEASE = 15.0  # seconds a lane stays ours without renewal
POLL = 0.5  # how often to look for lanes without a live owner
MAX_LANES = 1000  # lanes one process runs at once
QUEUE_GATHER = 0.002


class Lanes:
    """Claims and runs ordered lanes for one dispatcher process."""

    def __init__(self, ctx: Context, cache: EndpointCache, engine: Deliverer) -> None:
        owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._store = OrderedLanes(ctx.db, owner)
        self._cache = cache
        self._engine = engine
        self._exhausted = ctx.metrics.exhausted
        self._queue = Batcher(self._store.enqueue, QUEUE_GATHER)
        self._running: dict[str, asyncio.Task[None]] = {}
        self._wake = asyncio.Event()

    async def enqueue(self, waiting: list[Waiting]) -> None:
        """Queue an event's deliveries in their endpoints' lanes (returns once they are
        stored)."""
        await self._queue.submit_all(waiting)
        self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        """Claim lanes and keep their leases until ``stop``; then stop every lane."""
        renewed = time.monotonic()
        try:
            while not stop.is_set():
                try:
                    await self._claim()
                    if time.monotonic() - renewed > LEASE / 3:
                        await self._renew()
                        renewed = time.monotonic()
                except Exception as exc:  # the database is down: try again next poll
                    log.warning("ordered lanes not claimed or renewed: %s", exc)
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), POLL)
        finally:
            for task in self._running.values():
                task.cancel()
            if self._running:
                await asyncio.wait(set(self._running.values()))

    async def _claim(self) -> None:
        room = MAX_LANES - len(self._running)
        if room <= 0:
            return
        for endpoint_id in await self._store.claim(LEASE, room):
            if endpoint_id not in self._running:
                self._running[endpoint_id] = asyncio.create_task(self._lane(endpoint_id))

    async def _renew(self) -> None:
        if not self._running:
            return
        kept = await self._store.renew(list(self._running), LEASE)
        for endpoint_id, task in list(self._running.items()):
            if endpoint_id not in kept:  # taken over after a lapse: stop sending
                log.warning("lost the lease of ordered lane %s", endpoint_id)
                task.cancel()

    async def _lane(self, endpoint_id: str) -> None:
        try:
            while (head := await self._store.head(endpoint_id)) is not None:
                if head.body is None:  # dropped by retention before its turn
                    await self._store.done(head)
                    continue
                waiting = head.waiting
                target = await self._cache.get(waiting.org, waiting.env, endpoint_id)
                if target is None:
                    await self._store.drop(endpoint_id)
                    return
                if target.disabled:
                    return  # its deliveries wait until it is turned on again
                await self._turn(head, target)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("ordered lane %s stopped; it is taken again", endpoint_id)
        finally:
            self._running.pop(endpoint_id, None)
            with contextlib.suppress(Exception):
                await self._store.release(endpoint_id)

    async def _turn(self, head: Head, target: Target) -> None:
        """Attempt the head until it succeeds or is exhausted, waiting in place between."""
        waiting = head.waiting
        assert head.body is not None
        delivery = Delivery(
            waiting.event_id,
            waiting.event_type,
            waiting.org,
            waiting.env,
            waiting.event_created_ms,
            waiting.endpoint_id,
            head.body,
            waiting.traceparent,
        )
        delivery.trigger = "initial" if head.attempt == 1 else "retry"
        delivery.attempt = head.attempt
        delivery.step = head.step
        delivery.first_attempt_ms = head.first_attempt_ms
        due_ms = head.next_attempt_ms or 0
        engine = self._engine
        while True:
            await self._until(due_ms)
            while until_ms := await engine.hold(target, delivery):  # paused or at its rate limit
                await self._until(until_ms)
            recorded = await engine.attempt(delivery, target)
            if recorded.result.ok or recorded.retry is None or recorded.next_ms is None:
                if not recorded.result.ok:
                    self._exhausted.inc()
                await self._store.done(head)
                return
            await self._store.failed(head, recorded.retry.step, recorded.first_ms, recorded.next_ms)
            delivery.retried(recorded.first_ms, recorded.retry.step)
            due_ms = recorded.next_ms

    @staticmethod
    async def _until(when_ms: int) -> None:
        wait = when_ms / 1000 - time.time()
        if wait > 0:
            await asyncio.sleep(wait)
