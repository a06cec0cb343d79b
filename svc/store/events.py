"""Stored events and their outbox: an event is written with its outbox entry in one transaction.

The outbox entry is removed once the broker confirms the publish; the scheduler's sweep
re-publishes entries older than a few seconds, so a producer that dies between the Redis
write and the publish loses nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

from svc.events import Event
from svc.store.keys import Keys
from svc.store.values import text


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event as stored: its exact body plus the scope it belongs to."""

    event: Event
    org: str


class Events:
    """Event storage with a retention period."""

    def __init__(self, redis: Redis, keys: Keys, retention_s: float) -> None:
        self._redis = redis
        self._keys = keys
        self._retention_ms = int(retention_s * 1000)

    def stage(self, pipe: Pipeline, event: Event, org: str, outbox: bool = True) -> None:
        """Add the event (and its outbox entry) to a caller's transaction."""
        key = self._keys.event(event.id)
        pipe.hset(
            key,
            mapping={
                "body": event.body,
                "type": event.type,
                "env": event.environment,
                "org": org,
                "created_ms": event.created_ms,
            },
        )
        pipe.pexpire(key, self._retention_ms)
        if outbox:
            pipe.zadd(self._keys.outbox, {event.id: event.created_ms})

    async def store_if_absent(self, event: Event, org: str) -> None:
        """Keep an event that a foreign producer published without storing it."""
        key = self._keys.event(event.id)
        if await self._redis.exists(key):
            return
        async with self._redis.pipeline(transaction=True) as pipe:
            self.stage(pipe, event, org, outbox=False)
            await pipe.execute()

    async def load(self, event_id: str) -> StoredEvent | None:
        raw = await self._redis.hgetall(self._keys.event(event_id))
        return None if not raw else _stored(event_id, raw)

    async def published(self, event_id: str) -> None:
        """The broker confirmed the event: drop its outbox entry."""
        await self._redis.zrem(self._keys.outbox, event_id)

    async def stragglers(self, older_than_ms: int, limit: int = 500) -> list[str]:
        """Outbox entries created before ``older_than_ms`` (their publish may have been lost)."""
        found = await self._redis.zrangebyscore(
            self._keys.outbox, "-inf", older_than_ms, start=0, num=limit
        )
        return [text(f) for f in found]


def _stored(event_id: str, raw: dict[Any, Any]) -> StoredEvent:
    event = Event(
        id=event_id,
        type=raw[b"type"].decode(),
        environment=raw[b"env"].decode(),
        created_ms=int(raw[b"created_ms"]),
        body=raw[b"body"],
    )
    return StoredEvent(event, raw[b"org"].decode())
