"""Endpoint pauses: a receiver that answers 429 or 503 with ``Retry-After`` gets no delivery
from any dispatcher until then (its jobs wait in delay queues, no attempt counted).

The dispatcher that got the answer pauses the endpoint at once and announces it on Redis
pub/sub; the others follow the announcements. A lost announcement only means that another
dispatcher tries the endpoint once more, is answered the same, and pauses it itself.
"""

from __future__ import annotations

import asyncio
import logging
import time

import orjson
from redis.asyncio import Redis

from svc.pubsub import channel as notices

log = logging.getLogger(__name__)

MAX_PAUSED = 100_000


class Pauses:
    """Pause deadlines (Unix milliseconds) by endpoint id."""

    def __init__(self, redis: Redis, channel: str) -> None:
        self._redis = redis
        self._channel = channel
        self._until: dict[str, int] = {}
        self._announcing: set[asyncio.Task[None]] = set()

    def until(self, endpoint_id: str) -> int:
        """When the endpoint's pause ends, or 0 when it is not paused."""
        if not self._until:
            return 0
        until_ms = self._until.get(endpoint_id, 0)
        if until_ms and until_ms <= time.time() * 1000:
            del self._until[endpoint_id]
            return 0
        return until_ms

    def pause(self, endpoint_id: str, until_ms: int) -> None:
        """Pause here now, and announce it to the other dispatchers."""
        self._apply(endpoint_id, until_ms)
        task = asyncio.create_task(self._announce(endpoint_id, until_ms))
        self._announcing.add(task)
        task.add_done_callback(self._announcing.discard)

    def _apply(self, endpoint_id: str, until_ms: int) -> None:
        if len(self._until) >= MAX_PAUSED:
            now_ms = time.time() * 1000
            self._until = {e: u for e, u in self._until.items() if u > now_ms}
        self._until[endpoint_id] = max(until_ms, self._until.get(endpoint_id, 0))

    async def _announce(self, endpoint_id: str, until_ms: int) -> None:
        try:
            await self._redis.publish(self._channel, orjson.dumps([endpoint_id, until_ms]))
        except Exception as exc:
            log.warning("pause of %s not announced: %s", endpoint_id, exc)

    async def follow(self) -> None:
        """Apply other dispatchers' pauses as they are announced, until cancelled."""
        await notices.follow(self._redis, self._channel, self._notice)

    def _notice(self, data: object) -> None:
        try:
            endpoint_id, until_ms = orjson.loads(data)  # type: ignore[arg-type]
            self._apply(str(endpoint_id), int(until_ms))
        except (ValueError, TypeError):
            log.warning("ignoring a malformed pause notice")
