"""Idempotency keys: one record per (organisation, environment, key) with the first response.

A request claims its key with SET NX (state ``running``, short lease so a crashed request
does not block the key for a day), then stores its response (state ``done``, kept
``ttl_s``). A request that fails is released, so the client may try again with that key.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import orjson
from redis.asyncio import Redis

from svc.store.apikeys import Scope
from svc.store.keys import Keys

RUNNING_LEASE_MS = 60_000


@dataclass(frozen=True, slots=True)
class Claim:
    """What ``claim`` found: ``new`` (go ahead), ``running``, ``mismatch`` or ``done``."""

    outcome: str
    status: int = 0
    body: bytes = b""
    content_type: str = ""


def fingerprint(*parts: bytes | str) -> str:
    """A digest of what makes two requests "the same": method, path, content type, body."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()


class Idempotency:
    """Claims, stores and releases idempotency keys."""

    def __init__(self, redis: Redis, keys: Keys, ttl_s: float) -> None:
        self._redis = redis
        self._keys = keys
        self._ttl_ms = int(ttl_s * 1000)

    def _key(self, scope: Scope, key: str) -> str:
        digest = hashlib.sha256(key.encode()).hexdigest()
        return self._keys.idempotency(scope.org, scope.env, digest)

    async def claim(self, scope: Scope, key: str, fp: str) -> Claim:
        """Claim ``key`` for a request with fingerprint ``fp``, or say why not."""
        name = self._key(scope, key)
        running = orjson.dumps({"fp": fp, "state": "running"})
        for _ in range(3):  # the record may expire between SET NX and GET
            if await self._redis.set(name, running, nx=True, px=RUNNING_LEASE_MS):
                return Claim("new")
            raw = await self._redis.get(name)
            if raw is not None:
                return _found(orjson.loads(raw), fp)
        return Claim("running")

    async def store(
        self, scope: Scope, key: str, fp: str, status: int, body: bytes, content_type: str
    ) -> None:
        """Keep the first response for the retention period."""
        record = {
            "fp": fp,
            "state": "done",
            "status": status,
            "body": body.decode(),
            "content_type": content_type,
        }
        await self._redis.set(self._key(scope, key), orjson.dumps(record), px=self._ttl_ms)

    async def release(self, scope: Scope, key: str, fp: str) -> None:
        """Forget a claim whose request failed (only our own running claim)."""
        name = self._key(scope, key)
        raw = await self._redis.get(name)
        if raw is not None:
            record = orjson.loads(raw)
            if record.get("fp") == fp and record.get("state") == "running":
                await self._redis.delete(name)


def _found(record: dict[str, Any], fp: str) -> Claim:
    if record.get("fp") != fp:
        return Claim("mismatch")
    if record.get("state") != "done":
        return Claim("running")
    return Claim(
        "done", int(record["status"]), str(record["body"]).encode(), str(record["content_type"])
    )
