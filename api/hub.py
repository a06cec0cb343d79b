"""One Redis pub/sub subscriber per API process, fanning signals out to local listeners.

Long polls, payment WebSockets and terminal device connections register a ``Listener`` for a
topic; a signal wakes exactly the listeners of its topic. No listener ever polls Redis, and
the number of Redis connections does not grow with the number of waits. After a lost
subscription every listener gets a ``RESYNC`` signal, because signals may have been missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections import deque
from collections.abc import AsyncIterator, Iterator

from aiohttp import WSCloseCode, web
from redis.asyncio import Redis

from api.middleware.deadline import lift
from api.problems import Problem
from svc.http import CONTEXT
from svc.pubsub.channel import follow
from svc.pubsub.wakeups import RESYNC, Signal

log = logging.getLogger(__name__)

START_TIMEOUT = 10.0


class Listener:
    """The signals of one topic for one waiter, in arrival order."""

    __slots__ = ("_items", "_ready")

    def __init__(self) -> None:
        self._items: deque[Signal] = deque()
        self._ready = asyncio.Event()

    def put(self, signal: Signal) -> None:
        self._items.append(signal)
        self._ready.set()

    async def get(self) -> Signal:
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        return self._items.popleft()


class Hub:
    """Topic → listeners of this process, fed by one subscription to ``channel``."""

    def __init__(self, redis: Redis, channel: str) -> None:
        self._redis = redis
        self._channel = channel
        self._topics: dict[str, set[Listener]] = {}
        self.subscribed = asyncio.Event()

    @contextlib.contextmanager
    def listen(self, topic: str) -> Iterator[Listener]:
        """A listener for ``topic`` while the block runs; register before reading state."""
        listener = Listener()
        self._topics.setdefault(topic, set()).add(listener)
        try:
            yield listener
        finally:
            group = self._topics.get(topic)
            if group is not None:
                group.discard(listener)
                if not group:
                    del self._topics[topic]

    def listeners(self) -> int:
        return sum(len(group) for group in self._topics.values())

    def deliver(self, signal: Signal) -> None:
        """Hand a signal to the listeners of its topic (all of them for ``RESYNC``)."""
        if signal.topic == RESYNC:
            groups = list(self._topics.values())
        else:
            groups = [self._topics.get(signal.topic, set())]
        for group in groups:
            for listener in list(group):
                listener.put(signal)

    async def run(self) -> None:
        """Subscribe and deliver until cancelled; re-subscribes after a lost connection."""
        first = True

        def subscribed() -> None:
            nonlocal first
            self.subscribed.set()
            if not first:
                self.deliver(Signal(RESYNC, {"kind": "resync"}))
            first = False

        await follow(
            self._redis,
            self._channel,
            self._handle,
            on_subscribed=subscribed,
            on_lost=self.subscribed.clear,
        )

    def _handle(self, data: object) -> None:
        if not isinstance(data, bytes | str):
            return
        try:
            signal = Signal.loads(data)
        except ValueError:
            log.warning("ignored a malformed signal")
            return
        self.deliver(signal)


HUB = web.AppKey("hub", Hub)
SOCKETS = web.AppKey("sockets", weakref.WeakSet[web.WebSocketResponse])
"""Open WebSockets (payment streams, terminal devices), closed when the server shuts down."""

SHUTDOWN = Signal(RESYNC, {"kind": "shutdown"})
"""Delivered to every listener at shutdown: long polls answer at once, streams close."""


WEBSOCKET_HEARTBEAT = 20.0


async def open_websocket(request: web.Request) -> web.WebSocketResponse:
    """Upgrade to a WebSocket that shutdown will close; a plain request is a 426 Problem."""
    ws = web.WebSocketResponse(heartbeat=WEBSOCKET_HEARTBEAT)
    if not ws.can_prepare(request).ok:
        raise Problem(
            426,
            "websocket_required",
            "This route speaks WebSocket only.",
            headers={"Upgrade": "websocket"},
        )
    await ws.prepare(request)
    lift(request)  # the socket lives as long as it is open, past the request's deadline
    request.app[SOCKETS].add(ws)
    return ws


def install(app: web.Application) -> None:
    """Give the app its hub, started with the app and subscribed before it serves."""
    ctx = app[CONTEXT]
    app[HUB] = Hub(ctx.redis, ctx.keys.signals)
    app[SOCKETS] = weakref.WeakSet()
    app.cleanup_ctx.append(_run_hub)
    app.on_shutdown.append(_release_waiters)


async def _release_waiters(app: web.Application) -> None:
    # Without this, shutdown would wait its whole grace period for open polls and sockets.
    app[HUB].deliver(SHUTDOWN)
    sockets: weakref.WeakSet[web.WebSocketResponse] = app[SOCKETS]
    for socket in tuple(sockets):
        await socket.close(code=WSCloseCode.GOING_AWAY, message=b"server shutdown")


async def _run_hub(app: web.Application) -> AsyncIterator[None]:
    hub = app[HUB]
    task = asyncio.create_task(hub.run(), name="signal-hub")
    try:
        await asyncio.wait_for(hub.subscribed.wait(), START_TIMEOUT)
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
