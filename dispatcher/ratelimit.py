"""Per-endpoint rate limits (``rate_limit`` deliveries per second) held across dispatchers.

Each second of Unix time has a counter per endpoint in Redis, shared by every dispatcher
process: a delivery takes a place by incrementing it, and is then signed with the clock
reading that named the second, so the limit holds per second of the signatures' timestamps
however late Redis answers. Over the limit, a delivery waits for the next second in this
process when few others wait for that endpoint here, else it is deferred through a delay
queue. Losing Redis only loosens a limit for a moment: the count fails open.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time

from redis.asyncio import Redis
from redis.exceptions import RedisError

from svc.rediskeys import Keys

log = logging.getLogger(__name__)

MAX_SLEEPS = 2
JITTER = 0.05  # spreads the waiters of one endpoint over the start of the next second


class RateLimits:
    """Admits deliveries to rate-limited endpoints."""

    def __init__(self, redis: Redis, keys: Keys) -> None:
        self._redis = redis
        self._keys = keys
        self._sleeping: dict[str, int] = {}

    async def admit(self, endpoint_id: str, limit: int) -> tuple[int, float]:
        """``(0, at)`` when a delivery may go now (perhaps after a short wait), to be signed
        at ``at`` (Unix seconds in the second it was counted in); else the Unix time in
        milliseconds from which it may, and 0.0: the caller defers it until then."""
        for sleeps in range(MAX_SLEEPS + 1):
            now = time.time()
            second = int(now)
            if await self._take(endpoint_id, second) <= limit:
                return 0, now
            if sleeps == MAX_SLEEPS or self._sleeping.get(endpoint_id, 0) >= limit:
                break
            self._sleeping[endpoint_id] = self._sleeping.get(endpoint_id, 0) + 1
            try:
                await asyncio.sleep(max(0.0, second + 1 - time.time()) + random.uniform(0, JITTER))
            finally:
                left = self._sleeping[endpoint_id] - 1
                if left:
                    self._sleeping[endpoint_id] = left
                else:
                    del self._sleeping[endpoint_id]
        return (int(time.time()) + 1) * 1000, 0.0

    async def _take(self, endpoint_id: str, second: int) -> int:
        key = self._keys.rate(endpoint_id, second)
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                pipe.incr(key)
                pipe.expire(key, 2)
                count, _ = await pipe.execute()
        except RedisError as exc:
            log.warning("rate limit of %s not counted (Redis: %s); sending", endpoint_id, exc)
            return 0
        return int(count)
