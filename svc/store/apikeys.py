"""API keys: stored as SHA-256 digests, each mapping to an organisation and environment."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from redis.asyncio import Redis

from svc.ids import new_id, new_secret
from svc.store.keys import Keys
from svc.store.values import text

KEY_PREFIXES = {"test": "svc_test_", "live": "svc_live_"}


@dataclass(frozen=True, slots=True)
class Scope:
    """What a key sees: one organisation in one environment."""

    org: str
    env: str


def digest(key: str) -> str:
    # Keys carry 192 random bits, so a fast hash is enough: no dictionary to defend against.
    return hashlib.sha256(key.encode()).hexdigest()


class ApiKeys:
    """Creates and resolves API keys."""

    def __init__(self, redis: Redis, keys: Keys) -> None:
        self._redis = redis
        self._keys = keys

    async def organisation(self, name: str) -> str:
        """The id of the organisation called ``name``, created on first use."""
        candidate = new_id("org")
        await self._redis.set(self._keys.org_name(name), candidate, nx=True)
        found = await self._redis.get(self._keys.org_name(name))
        assert found is not None
        return text(found)

    async def create(self, env: str, org_name: str = "default") -> tuple[str, Scope]:
        """A new key for ``env`` in organisation ``org_name``; the key is returned only here."""
        if env not in KEY_PREFIXES:
            raise ValueError(f"environment must be test or live, not {env!r}")
        org = await self.organisation(org_name)
        key = new_secret(KEY_PREFIXES[env])
        await self._redis.hset(
            self._keys.api_key(digest(key)),
            mapping={"org": org, "env": env, "created_ms": int(time.time() * 1000)},
        )
        return key, Scope(org, env)

    async def resolve(self, key: str) -> Scope | None:
        """The scope of ``key``, or None when it is unknown or does not match its prefix."""
        env = next((e for e, p in KEY_PREFIXES.items() if key.startswith(p)), None)
        if env is None:
            return None
        found = await self._redis.hmget(self._keys.api_key(digest(key)), "org", "env")
        if found[0] is None or found[1] is None or text(found[1]) != env:
            return None
        return Scope(text(found[0]), env)
