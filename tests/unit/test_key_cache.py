"""The API key cache reads a secret's key once however many requests want it at the same time,
and a lookup begun before a change notice is neither joined by later requests nor kept; an
entry is never used past its time to live."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from api.middleware import key_cache
from api.middleware.key_cache import KeyCache


class _Keys:
    """``ApiKeys`` as the cache uses it: each lookup takes ``delay`` and is counted."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.lookups = 0
        self.revoked = False
        self.gate = asyncio.Event()
        self.gate.set()

    async def authenticate(self, secret: str) -> Any:
        self.lookups += 1
        await self.gate.wait()
        await asyncio.sleep(self.delay)
        if self.revoked:  # a revoked key resolves to nothing
            return None
        key = SimpleNamespace(id="key_1", expires_ms=None)
        return SimpleNamespace(key=key, until_ms=None)

    async def touch(self, key_id: str) -> None:
        pass


def _cache(keys: _Keys) -> KeyCache:
    ctx = SimpleNamespace(settings=SimpleNamespace(api_key_cache_ttl=5.0), api_keys=keys)
    return KeyCache(ctx)  # type: ignore[arg-type]


async def test_concurrent_requests_share_one_lookup() -> None:
    keys = _Keys(0.05)
    cache = _cache(keys)
    found = await asyncio.gather(*(cache.authenticate("sk_test_x") for _ in range(20)))
    assert keys.lookups == 1
    assert {f.key.id for f in found if f is not None} == {"key_1"}
    await cache.authenticate("sk_test_x")
    assert keys.lookups == 1  # kept


async def test_a_request_cut_short_leaves_the_lookup_to_the_others() -> None:
    keys = _Keys(0.05)
    cache = _cache(keys)
    first = asyncio.create_task(cache.authenticate("sk_test_x"))
    second = asyncio.create_task(cache.authenticate("sk_test_x"))
    await asyncio.sleep(0.01)
    first.cancel()
    assert (await second) is not None
    assert keys.lookups == 1


async def test_a_lookup_begun_before_a_notice_is_not_joined_nor_kept() -> None:
    keys = _Keys(0.0)
    keys.gate.clear()
    cache = _cache(keys)
    before = asyncio.create_task(cache.authenticate("sk_test_x"))
    await asyncio.sleep(0.01)
    cache.forget("key_1")  # the key was revoked while it was being read
    after = asyncio.create_task(cache.authenticate("sk_test_x"))
    await asyncio.sleep(0.01)
    assert keys.lookups == 2
    keys.gate.set()
    await asyncio.gather(before, after)
    await cache.authenticate("sk_test_x")
    assert keys.lookups == 2  # the later lookup was kept, the earlier one not


async def test_without_a_notice_a_key_is_read_again_once_its_ttl_passed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A lost notice of a revocation matters for ``SVC_API_KEY_CACHE_TTL`` at most: the entry
    is not used past it, and the next request reads the key (revoked: refused) again."""
    keys = _Keys(0.0)
    cache = _cache(keys)
    now = [1000.0]
    monkeypatch.setattr(key_cache.time, "monotonic", lambda: now[0])
    assert await cache.authenticate("sk_test_x") is not None
    now[0] += 4.9
    assert await cache.authenticate("sk_test_x") is not None
    assert keys.lookups == 1  # still within the time to live (5 s here)
    keys.revoked = True  # revoked, and the notice lost
    now[0] += 0.2
    assert await cache.authenticate("sk_test_x") is None
    assert keys.lookups == 2
