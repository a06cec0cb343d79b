"""The dispatchers' endpoint cache: a notice drops a scope at once; a scope whose time to
live ran out keeps serving while it is loaded again, so no event waits for PostgreSQL."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import pytest

from dispatcher.endpoints import RELOAD_RETRY, EndpointCache
from svc.context import Context
from svc.orgs import Scope
from svc.webhooks.model import Endpoint
from svc.webhooks.store import Endpoints

TTL = 0.2
EVENT = "payment.succeeded"


class GatedEndpoints:
    """The real store, with loads that wait until the test opens the gate (or fail)."""

    def __init__(self, endpoints: Endpoints) -> None:
        self._endpoints = endpoints
        self.gate = asyncio.Event()
        self.gate.set()
        self.loads = 0
        self.fail = False

    async def in_scope(self, org: str, env: str) -> list[Endpoint]:
        self.loads += 1
        await self.gate.wait()
        if self.fail:
            raise ConnectionError("PostgreSQL is away")
        return await self._endpoints.in_scope(org, env)


@dataclass
class Cached:
    """A scope with one endpoint, its store behind a gate and a cache that has loaded it."""

    scope: Scope
    first: Endpoint
    store: GatedEndpoints
    cache: EndpointCache


async def _cached(ctx: Context, name: str, ttl: float) -> Cached:
    scope = Scope(await ctx.orgs.ensure(f"{ctx.settings.namespace}-{name}"), "test")
    first = await ctx.endpoints.create(ctx.db, scope, "https://a.example/hook", [EVENT])
    store = GatedEndpoints(ctx.endpoints)
    cache = EndpointCache(store, ttl)  # type: ignore[arg-type]
    assert await _subscribers(cache, scope) == {first.id}
    return Cached(scope, first, store, cache)


async def _expired(ctx: Context, name: str) -> Cached:
    """A cached scope whose time to live has just run out."""
    cached = await _cached(ctx, name, TTL)
    await asyncio.sleep(TTL * 1.5)
    return cached


async def _subscribers(cache: EndpointCache, scope: Scope) -> set[str]:
    targets = await asyncio.wait_for(cache.subscribers(scope.org, scope.env, EVENT), 1)
    return {t.id for t in targets}


async def test_an_expired_scope_serves_while_it_reloads_and_then_serves_the_new_copy(
    ctx: Context,
) -> None:
    cached = await _cached(ctx, "expired", TTL)
    scope, first, store, cache = cached.scope, cached.first, cached.store, cached.cache

    # A change whose notice was lost; the time to live runs out; PostgreSQL is slow.
    second = await ctx.endpoints.create(ctx.db, scope, "https://b.example/hook", [EVENT])
    await asyncio.sleep(TTL * 1.5)
    store.gate.clear()
    assert await _subscribers(cache, scope) == {first.id}  # served at once, not waiting
    assert await _subscribers(cache, scope) == {first.id}
    assert store.loads == 2  # one reload for both callers

    store.gate.set()
    for _ in range(50):
        if await _subscribers(cache, scope) == {first.id, second.id}:
            break
        await asyncio.sleep(0.01)
    assert await _subscribers(cache, scope) == {first.id, second.id}
    await cache.close()


async def test_a_notice_makes_the_next_event_wait_for_a_fresh_load(ctx: Context) -> None:
    cached = await _cached(ctx, "noticed", 60)
    scope, first, store, cache = cached.scope, cached.first, cached.store, cached.cache

    await ctx.endpoints.delete(ctx.db, scope, first.id)
    cache.invalidate(scope.org, scope.env)
    store.gate.clear()
    waiting = asyncio.ensure_future(cache.subscribers(scope.org, scope.env, EVENT))
    await asyncio.sleep(0.05)
    assert not waiting.done()  # the deleted endpoint is never served again
    store.gate.set()
    assert await asyncio.wait_for(waiting, 1) == []
    await cache.close()


async def test_a_failed_reload_keeps_the_old_copy_and_is_tried_again(
    ctx: Context, caplog: pytest.LogCaptureFixture
) -> None:
    cached = await _expired(ctx, "failing")
    scope, first, store, cache = cached.scope, cached.first, cached.store, cached.cache
    store.fail = True
    with caplog.at_level(logging.WARNING, logger="dispatcher.endpoints"):
        assert await _subscribers(cache, scope) == {first.id}
        await asyncio.sleep(0.05)  # the reload fails in the background
        for _ in range(20):  # served from the old copy, with no reload before the retry
            assert await _subscribers(cache, scope) == {first.id}
    assert store.loads == 2
    assert "reloading the endpoints" in caplog.text

    store.fail = False
    await asyncio.sleep(RELOAD_RETRY)
    assert await _subscribers(cache, scope) == {first.id}
    await asyncio.sleep(0.05)
    assert store.loads == 3  # tried again once the retry time passed, and it worked
    await cache.close()


async def test_callers_in_one_turn_of_the_loop_share_one_reload(
    ctx: Context, caplog: pytest.LogCaptureFixture
) -> None:
    """A busy dispatcher asks for an expired scope many times before any load can start."""
    cached = await _expired(ctx, "busy")
    scope, first, store, cache = cached.scope, cached.first, cached.store, cached.cache
    store.gate.clear()
    with caplog.at_level(logging.WARNING, logger="dispatcher.endpoints"):
        for _ in range(3):  # awaited inline: none of these calls yields to the loop
            assert {t.id for t in await cache.subscribers(scope.org, scope.env, EVENT)} == {
                first.id
            }
        calls = [cache.subscribers(scope.org, scope.env, EVENT) for _ in range(10)]
        assert all(len(found) == 1 for found in await asyncio.gather(*calls))
        store.gate.set()
        await asyncio.sleep(0.05)
    assert store.loads == 2
    assert "reloading the endpoints" not in caplog.text
    await cache.close()


async def test_a_notice_for_another_scope_does_not_stop_a_load_being_kept(ctx: Context) -> None:
    """Endpoint changes in other organisations, however frequent, never make a scope's
    load useless: it is kept and later events use it without asking PostgreSQL again."""
    cached = await _cached(ctx, "kept", 60)
    scope, store, cache = cached.scope, cached.store, cached.cache
    cache.invalidate(scope.org, scope.env)
    store.gate.clear()
    waiting = asyncio.ensure_future(cache.subscribers(scope.org, scope.env, EVENT))
    await asyncio.sleep(0.02)
    cache.invalidate("org_other", "test")  # a change elsewhere while this scope loads
    store.gate.set()
    await asyncio.wait_for(waiting, 1)
    for _ in range(5):
        await _subscribers(cache, scope)
    assert store.loads == 2  # the first load and the one after our own notice
    await cache.close()


async def test_a_notice_during_a_load_makes_later_callers_wait_for_a_fresh_one(
    ctx: Context,
) -> None:
    cached = await _cached(ctx, "raced", 60)
    scope, first, store, cache = cached.scope, cached.first, cached.store, cached.cache
    cache.invalidate(scope.org, scope.env)
    store.gate.clear()
    before = asyncio.ensure_future(cache.subscribers(scope.org, scope.env, EVENT))
    await asyncio.sleep(0.02)  # its load has read nothing yet: the gate is closed
    second = await ctx.endpoints.create(ctx.db, scope, "https://b.example/hook", [EVENT])
    cache.invalidate(scope.org, scope.env)  # the notice of that change
    after = asyncio.ensure_future(cache.subscribers(scope.org, scope.env, EVENT))
    await asyncio.sleep(0.02)
    store.gate.set()
    await asyncio.wait_for(before, 1)
    assert {t.id for t in await asyncio.wait_for(after, 1)} == {first.id, second.id}
    assert store.loads == 3
    assert await _subscribers(cache, scope) == {first.id, second.id}
    assert store.loads == 3  # the fresh load is the one kept
    await cache.close()
