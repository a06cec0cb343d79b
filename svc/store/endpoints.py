"""Webhook endpoints: records, the per-scope listing and the per-event-type subscriber sets."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import orjson
from redis.asyncio import Redis

from svc.events import iso_ms
from svc.ids import new_id, new_secret
from svc.store.apikeys import Scope
from svc.store.keys import Keys
from svc.store.values import blob, text


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A stored endpoint; ``secret`` never leaves the service after creation."""

    id: str
    org: str
    env: str
    url: str
    events: tuple[str, ...]
    secret: str
    description: str
    created_ms: int

    def public(self) -> dict[str, Any]:
        """The API view: everything but the secret and the organisation id."""
        return {
            "id": self.id,
            "object": "webhook_endpoint",
            "url": self.url,
            "events": list(self.events),
            "description": self.description,
            "environment": self.env,
            "created_at": iso_ms(self.created_ms),
        }

    def dumps(self) -> bytes:
        return orjson.dumps(asdict(self))

    @classmethod
    def loads(cls, raw: bytes) -> Endpoint:
        data = orjson.loads(raw)
        data["events"] = tuple(data["events"])
        return cls(**data)


class Endpoints:
    """Endpoint storage; every read is scoped to an organisation and environment."""

    def __init__(self, redis: Redis, keys: Keys) -> None:
        self._redis = redis
        self._keys = keys

    async def create(
        self, scope: Scope, url: str, events: list[str], description: str = ""
    ) -> Endpoint:
        endpoint = Endpoint(
            id=new_id("we"),
            org=scope.org,
            env=scope.env,
            url=url,
            events=tuple(events),
            secret=new_secret("whsec_", 32),
            description=description,
            created_ms=int(time.time() * 1000),
        )
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.set(self._keys.endpoint(endpoint.id), endpoint.dumps())
            listing = self._keys.endpoints(scope.org, scope.env)
            pipe.zadd(listing, {endpoint.id: endpoint.created_ms})
            for event_type in endpoint.events:
                pipe.sadd(self._keys.subscribers(scope.org, scope.env, event_type), endpoint.id)
            await pipe.execute()
        return endpoint

    async def load(self, endpoint_id: str) -> Endpoint | None:
        """An endpoint by id, whatever its scope (for roles that act on jobs)."""
        raw = await self._redis.get(self._keys.endpoint(endpoint_id))
        return None if raw is None else Endpoint.loads(blob(raw))

    async def get(self, scope: Scope, endpoint_id: str) -> Endpoint | None:
        """An endpoint of ``scope``; another scope's endpoint is None, as if it did not exist."""
        endpoint = await self.load(endpoint_id)
        if endpoint is None or (endpoint.org, endpoint.env) != (scope.org, scope.env):
            return None
        return endpoint

    async def delete(self, scope: Scope, endpoint_id: str) -> bool:
        endpoint = await self.get(scope, endpoint_id)
        if endpoint is None:
            return False
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.delete(self._keys.endpoint(endpoint_id))
            pipe.zrem(self._keys.endpoints(scope.org, scope.env), endpoint_id)
            for event_type in endpoint.events:
                pipe.srem(self._keys.subscribers(scope.org, scope.env, event_type), endpoint_id)
            await pipe.execute()
        return True

    async def page(
        self, scope: Scope, limit: int, after: str | None
    ) -> tuple[list[Endpoint], bool]:
        """Endpoints newest first; ``after`` is the last id of the previous page."""
        key = self._keys.endpoints(scope.org, scope.env)
        start = 0
        if after is not None:
            rank: Any = await self._redis.zrevrank(key, after)
            start = 0 if rank is None else int(rank) + 1
        ids = [text(i) for i in await self._redis.zrevrange(key, start, start + limit)]
        found = await self._redis.mget([self._keys.endpoint(i) for i in ids]) if ids else []
        endpoints = [Endpoint.loads(blob(raw)) for raw in found if raw is not None]
        return endpoints[:limit], len(ids) > limit

    async def subscribers_of(self, scopes: list[tuple[str, str, str]]) -> list[list[str]]:
        """Subscriber ids for many (organisation, environment, event type) in one round trip."""
        async with self._redis.pipeline(transaction=False) as pipe:
            for org, env, event_type in scopes:
                pipe.smembers(self._keys.subscribers(org, env, event_type))
            found = await pipe.execute()
        return [sorted(text(m) for m in members) for members in found]

    async def subscribers(self, org: str, env: str, event_type: str) -> list[str]:
        """Ids of the endpoints subscribed to ``event_type`` in a scope, now."""
        return (await self.subscribers_of([(org, env, event_type)]))[0]
