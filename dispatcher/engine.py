"""The delivery engine: the one way a dispatcher sends a delivery, whatever its source.

Every source (an event's fan-out, a job from ``<ns>.deliveries``, an ordered lane) hands its
deliveries to the ``Deliverer``, which owns the rule for one: pause, endpoint slot, rate
limit (or a deferral through a delay queue), sign and send, classify, record in the delivery
log, and hand a failure to the ladder (its retry published with a broker confirm). Only then
is the delivery settled and its source told.

Deliveries wait in one bounded queue and are sent by a fixed number of sender tasks, at most
``SVC_DISPATCHER_CONCURRENCY``, started as work first needs them. So that one number bounds
the deliveries in flight in a process, whatever the source and however wide the events;
a source hands in its next delivery once there is room, and no task or timer is made per
delivery. A busy sender takes the next delivery straight from the queue; only an idle one
waits on a future. A sender does not wait for a success to be written to the delivery log
(a batch gathers for a moment, then takes a round trip): it goes on to the next delivery,
and the success settles when its batch is written. At most ``size`` successes wait so; past
that a sender waits for its own record, so a log that cannot be written stops the senders
too, with at most twice ``size`` deliveries made and not yet logged.

Within that bound, as many senders are busy as the process can serve: the allowance
(``dispatcher.allowance``) is adjusted at every sweep from the process's CPU time and the
deliveries' times from send to answer, and a delivery beyond it waits in the queue.

A fan-out delivery still waiting for its receiver's answer ``SVC_HANDOFF_AFTER`` after it was
sent is handed off by one periodic sweep: a job of its own stands in for it in a delay queue
longer than any delivery can take, and the delivery is settled, so its event need not wait.
A delivery that has its answer and is only being recorded is never handed off: a stand-in
would find no attempt in the log yet, and send it again.

Recording an attempt (the delivery log, the ladder's next retry, ``Retry-After``, metrics) is
``dispatcher.attempts``'s; publishing what leaves the process (a retry, a wait, a deferral, a
hand-off's stand-in) is ``dispatcher.exits``'s.

A message that comes back (redelivered by the broker, re-published by the outbox sweep, a
stand-in of a hand-off or of the retry rescue) may carry deliveries that were made already;
its source asks ``succeeded``, and a delivery whose success is logged is skipped and counted
in ``svc_deliveries_skipped_total``. Every retry asks too: an event fanned out twice has two
retry chains. A first delivery reads nothing. Before the log, ``succeeded`` asks what this
process holds (``dispatcher.under_way``): a copy of a delivery still under way here waits
for it to end, and is left out when it was made or handed on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import statistics
import time
from collections import deque
from collections.abc import Coroutine, Sequence
from typing import Any

from dispatcher.allowance import Pool
from dispatcher.attempts import Attempts, Recorded
from dispatcher.delivery import Delivery
from dispatcher.endpoints import Target
from dispatcher.exits import Exits
from dispatcher.gate import EndpointGate
from dispatcher.pauses import Pauses
from dispatcher.ratelimit import RateLimits
from dispatcher.sender import Result, Sender
from dispatcher.under_way import UnderWay
from svc.context import Context
from svc.metrics import SKIP_REASONS

log = logging.getLogger(__name__)

SWEEP_EVERY = 0.1
"""Seconds between two looks for deliveries to hand off (at most this late), and between two
adjustments of the senders' allowance."""


def _settle(delivery: Delivery, error: BaseException | None) -> None:
    delivery.settle(error)


class _Turn:
    """An ordered lane's attempt waiting for its outcome."""

    __slots__ = ("future",)

    def __init__(self) -> None:
        self.future: asyncio.Future[Recorded] = asyncio.get_running_loop().create_future()


class Deliverer:
    """Sends, records and retries the deliveries of one dispatcher process."""

    def __init__(self, ctx: Context, sender: Sender) -> None:
        settings = ctx.settings
        self._ctx = ctx
        self._sender = sender
        self._gate = EndpointGate(settings.endpoint_concurrency, settings.endpoint_wait)
        self._handoff_queue = ctx.topology.delay(ctx.topology.handoff_ms)
        self._handoff_after = settings.handoff_after
        self._exits = Exits(ctx)
        self.limits = RateLimits(ctx.redis, ctx.keys)
        self.pauses = Pauses(ctx.redis, ctx.keys.endpoint_pauses)
        self._attempts = Attempts(ctx, self.pauses)
        self._skipped = {reason: ctx.metrics.skipped.labels(reason) for reason in SKIP_REASONS}
        # The bounded structure: ``size`` senders at most, as many deliveries queued.
        self.size = max(1, settings.dispatcher_concurrency)
        self._queue: deque[tuple[Delivery, Target, _Turn | None]] = deque()
        self._idle: list[asyncio.Future[tuple[Delivery, Target, _Turn | None]]] = []
        self._room: deque[asyncio.Future[None]] = deque()
        self._sending: list[Delivery | None] = []
        """What each sender is delivering (None: nothing); the hand-off sweep reads it."""
        self._pool = Pool(self.size)
        self._answered: list[float] = []
        """Seconds from send to answer of the deliveries answered since the last sweep."""
        self._busy = 0
        """Senders with a delivery (at most ``self._pool.allowed``, unless it shrank since)."""
        self._senders: set[asyncio.Task[None]] = set()
        self._background: set[asyncio.Task[None]] = set()
        self._sweeping = False
        self._in_flight = 0
        self._recording = 0
        """Successes being written to the delivery log, their senders gone on (at most
        ``size``: past it a sender waits for its own record)."""
        self._under_way = UnderWay()
        """The deliveries handed to ``submit`` and not ended."""
        # A gauge read at scrape time costs the hot path nothing.
        ctx.metrics.in_flight.set_function(lambda: self._in_flight)

    # -- sources hand work in ------------------------------------------------------------

    async def submit(self, delivery: Delivery, target: Target) -> None:
        """Queue ``delivery`` for a sender; waits only while the queue is full. Its source
        learns the outcome through ``delivery.on_settled``."""
        key = (delivery.event_id, delivery.endpoint_id)
        self._under_way.start(key)
        try:
            await self._put((delivery, target, None))
        except BaseException:
            self._under_way.end(key, False)
            raise

    async def attempt(self, delivery: Delivery, target: Target) -> Recorded:
        """One attempt, sent and recorded, with the ladder's next retry; no endpoint slot and
        nothing published: an ordered lane's step (it waits in place, see ``hold``)."""
        turn = _Turn()
        await self._put((delivery, target, turn))
        return await turn.future

    async def _put(self, item: tuple[Delivery, Target, _Turn | None]) -> None:
        while True:
            pool = self._pool
            if (self._busy < pool.allowed or pool.more()) and self._hand(item):
                return
            if len(self._queue) < self.size:
                self._queue.append(item)
                return
            room = asyncio.get_running_loop().create_future()
            self._room.append(room)
            try:
                await room
            except asyncio.CancelledError:
                if room.done() and not room.cancelled():
                    self._make_room()  # pass the room on to the next in line
                raise

    def _make_room(self) -> None:
        while self._room:
            room = self._room.popleft()
            if not room.done():
                room.set_result(None)
                return

    def _hand(self, item: tuple[Delivery, Target, _Turn | None]) -> bool:
        """Give ``item`` to an idle sender, or to a new one while there are fewer than
        ``size``; False when every sender is busy."""
        while self._idle:
            waiting = self._idle.pop()
            if not waiting.done():
                self._busy += 1
                waiting.set_result(item)
                return True
        if len(self._sending) < self.size:
            self._busy += 1
            self._start(item)
            return True
        return False

    def _start(self, item: tuple[Delivery, Target, _Turn | None]) -> None:
        slot = len(self._sending)
        self._sending.append(None)
        task = asyncio.create_task(self._serve(slot, item))
        self._senders.add(task)
        task.add_done_callback(self._senders.discard)
        if not self._sweeping:
            self._sweeping = True
            self._watch(self._sweep())

    async def _serve(self, slot: int, item: tuple[Delivery, Target, _Turn | None]) -> None:
        """One sender: deliver, then the next queued delivery, or wait idle for one."""
        loop = asyncio.get_running_loop()
        while True:
            delivery, target, turn = item
            self._sending[slot] = delivery
            carried: bool | None = False  # None: a success being written ends it
            try:
                if turn is None:
                    carried = await self._deliver(delivery, target)
                else:
                    turn.future.set_result(await self._attempt(delivery, target))
            except Exception as exc:
                if turn is not None:
                    if not turn.future.done():
                        turn.future.set_exception(exc)
                elif delivery.settled:
                    log.warning("a handed-off delivery failed (its hand-off job sends it): %s", exc)
                else:
                    delivery.settle(exc)
            finally:
                self._sending[slot] = None
                if turn is None and carried is not None:
                    self._under_way.end((delivery.event_id, delivery.endpoint_id), carried)
            if self._queue and self._busy <= self._pool.allowed:
                item = self._queue.popleft()
                if self._room:
                    self._make_room()
                continue
            self._busy -= 1
            idle: asyncio.Future[tuple[Delivery, Target, _Turn | None]] = loop.create_future()
            self._idle.append(idle)
            item = await idle

    # -- the rule for one delivery -------------------------------------------------------

    async def hold(self, target: Target, delivery: Delivery) -> int:
        """When ``target`` takes ``delivery``: 0 for now, else the Unix milliseconds its
        pause or its rate limit ends (a paused endpoint is not counted against its limit)."""
        return self.pauses.until(target.id) or await self._admit(target, delivery)

    async def _admit(self, target: Target, delivery: Delivery) -> int:
        """0 when ``target``'s rate limit, if any, lets ``delivery`` go now (signed in the
        second the limit counted it in), else the Unix milliseconds from which it may."""
        delivery.signed_at = 0.0
        if target.rate_limit is None:
            return 0
        until_ms, delivery.signed_at = await self.limits.admit(target.id, target.rate_limit)
        return until_ms

    async def _deliver(self, delivery: Delivery, target: Target) -> bool | None:
        """Deliver, or hand on (deferred, its retry published): True; None while its success
        is being written (``_recorded`` ends it)."""
        until_ms = self.pauses.until(target.id)
        if not until_ms:
            # The endpoint slot comes before the rate limit, so that a delivery the limit
            # lets go is sent at once, not after a wait for a slot.
            if not await self._gate.acquire(target.id):
                delivery.deferrals += 1
                delivery.not_before_ms = 0
                await self._exits.leave(
                    delivery, self._ctx.topology.defer_queue(delivery.deferrals)
                )
                self._ctx.metrics.deferred.inc()
                delivery.settle()
                return True
            answered: bool | None = None  # not sent: the slot goes back as it was
            try:
                until_ms = await self._admit(target, delivery)
                if not until_ms:
                    answered = False
                    result = await self._send(delivery, target)
                    answered = result.status_code is not None
            finally:
                self._gate.release(target.id, answered)
        if until_ms:
            delivery.deferrals += 1
            await self._exits.wait(delivery, until_ms)
            self._ctx.metrics.deferred.inc()
            delivery.settle()
            return True
        if result.ok and self._recording < self.size:
            # The sender goes on while the success is written; the delivery settles then.
            self._recording += 1
            self._attempts.record_soon(delivery, result, self._recorded)
            return None
        recorded = await self._attempts.record(delivery, result)
        if not result.ok:
            await self._exits.follow(delivery, recorded)
        delivery.settle()
        return True

    def _recorded(self, delivery: Delivery, error: BaseException | None) -> None:
        self._recording -= 1
        self._under_way.end((delivery.event_id, delivery.endpoint_id), error is None)
        delivery.settle(error)

    async def _attempt(self, delivery: Delivery, target: Target) -> Recorded:
        return await self._attempts.record(delivery, await self._send(delivery, target))

    async def _send(self, delivery: Delivery, target: Target) -> Result:
        delivery.started = time.monotonic()
        self._in_flight += 1
        try:
            result = await self._sender.send(target, delivery)
        finally:
            self._in_flight -= 1
            delivery.answered = True
        self._answered.append(result.duration)
        return result

    async def wait(self, delivery: Delivery, until_ms: int) -> None:
        """Send ``delivery`` round a delay queue until ``until_ms`` (no attempt is counted)."""
        await self._exits.wait(delivery, until_ms)

    async def _sweep(self) -> None:
        """Hand off the fan-out's deliveries that have waited too long for their answer, and
        adjust the senders' allowance (more senders for the deliveries waiting, if any)."""
        while True:
            await asyncio.sleep(SWEEP_EVERY)
            answered, self._answered = self._answered, []
            median = statistics.median_high(answered) if answered else None
            allowed = self._pool.adjust(bool(self._queue), median)
            while self._queue and self._busy < allowed and self._hand(self._queue[0]):
                self._queue.popleft()
                if self._room:
                    self._make_room()
            late = time.monotonic() - self._handoff_after
            for delivery in self._sending:
                if (
                    delivery is not None
                    and delivery.handoff
                    and not delivery.answered
                    and not delivery.settled
                    and not delivery.handed_off
                    and 0 < delivery.started <= late
                ):
                    delivery.handed_off = True
                    self._watch(self._hand_off(delivery))

    async def _hand_off(self, delivery: Delivery) -> None:
        """A job of its own stands in for ``delivery`` (same attempt, nothing counted): it
        waits in a delay queue longer than the delivery can take, so by the time it runs the
        delivery has been recorded (then the job does nothing) or its process died."""
        try:
            await self._exits.leave(delivery, self._handoff_queue)
        except Exception as exc:  # its event waits for the delivery itself instead
            delivery.handed_off = False
            log.warning("hand-off of a slow delivery not confirmed: %s", exc)
            return
        self._ctx.metrics.handed_off.inc()
        delivery.settle()

    def _watch(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- deliveries made already ---------------------------------------------------------

    async def succeeded(self, event_id: str, endpoint_ids: Sequence[str]) -> set[str]:
        """Which of these endpoints have ``event_id`` delivered: by a delivery under way in
        this process, once it ended made or handed on (waited for), or by a success in the
        delivery log."""
        made = {e for e in endpoint_ids if await self._under_way.carried((event_id, e))}
        rest = [e for e in endpoint_ids if e not in made]
        if rest:
            made |= await self._ctx.deliveries.succeeded(event_id, rest)
        return made

    def skip_disabled(self, delivery: Delivery) -> None:
        """Log ``delivery`` as skipped, its endpoint being disabled, and settle it once the
        row is written (with the attempts' batch, no round trip of its own)."""
        self._attempts.skip_soon(delivery, _settle)

    def skipped(self, reason: str, count: int = 1) -> None:
        """Count deliveries left out because the log says they were made."""
        self._skipped[reason].inc(count)

    # -- shutdown ------------------------------------------------------------------------

    async def close(self) -> None:
        """Stop every sender and the sweep (after the consumers have drained): deliveries
        still running are cut off, and their messages, not acked, go back to their queues."""
        tasks = (*self._senders, *self._background)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
