"""Resolved API keys of this API process, kept a few seconds so a request costs no query.

An entry lives ``SVC_API_KEY_CACHE_TTL`` at most, and never past the time its secret or its
key expires. A rolled or revoked key is announced on Redis after the commit
(``svc.keys.store.KeyChanges``); the process that made the change drops that key's entries
at once, every other process when the notice arrives, and each drops everything after a
lost subscription, since notices may have been missed.
The time to live bounds how long a lost notice can matter.

A secret that resolves to no usable key is remembered as such for the same time to live (at
most ``MAX_MISSES`` of them, the oldest dropped first), so a made-up key sent again costs no
query. No notice is needed for a new key: a secret is drawn at random when its key is made
or rolled, so none can have been refused before; a revoked or expired key only ever stops
working.

Each process records a key's use at most once a minute, in the background.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections.abc import AsyncIterator, Callable

from aiohttp import web

from svc.context import Context
from svc.http import CONTEXT
from svc.keys.model import Authenticated
from svc.pubsub.channel import follow

MAX_ENTRIES = 10_000
MAX_MISSES = 10_000


class KeyCache:
    """Secret digest → the key it authenticates, for a short while."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._ttl = ctx.settings.api_key_cache_ttl
        self._entries: dict[bytes, tuple[Authenticated, float]] = {}
        self._misses: dict[bytes, float] = {}
        """Digests of secrets that resolved to nothing, until when; oldest first."""
        self._touched: dict[str, int] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._changes = 0
        """Notices so far: a lookup that began before one may hold what it announced."""
        self._lookups: dict[tuple[bytes, int], asyncio.Future[Authenticated | None]] = {}
        """Lookups under way, by secret digest and the notices seen when each began."""

    async def authenticate(self, secret: str) -> Authenticated | None:
        """The usable key of ``secret``, from the cache or PostgreSQL."""
        now = time.monotonic()
        digest = hashlib.sha256(secret.encode()).digest()
        cached = self._entries.get(digest)
        if cached is not None and now < cached[1]:
            found: Authenticated | None = cached[0]
        elif now < self._misses.get(digest, now):
            return None
        else:
            found = await self._lookup(digest, secret, now)
        if found is None or not self._still_good(found):
            self._entries.pop(digest, None)
            self._missed(digest, now)
            return None
        self._touch(found.key.id)
        return found

    def known(self, secret: str) -> bool:
        """Whether ``secret`` resolved to a key in this process lately (its entry may have
        run out since)."""
        return hashlib.sha256(secret.encode()).digest() in self._entries

    def _missed(self, digest: bytes, now: float) -> None:
        self._misses.pop(digest, None)  # to the end: the oldest go first
        if len(self._misses) >= MAX_MISSES:
            del self._misses[next(iter(self._misses))]
        self._misses[digest] = now + self._ttl

    async def _lookup(self, digest: bytes, secret: str, now: float) -> Authenticated | None:
        """Read the key from PostgreSQL, one lookup per secret at a time: requests that come
        while it runs wait for it instead of each taking a connection of the pool for the same
        row (a busy key's entry running out would otherwise send a burst of them, which a slow
        database turns into a queue for the pool). A lookup begun before a change notice is
        not joined by requests that came after it, nor kept."""
        changes = self._changes
        shared = self._lookups.get((digest, changes))
        if shared is None:
            shared = asyncio.ensure_future(self._ctx.api_keys.authenticate(secret))
            self._lookups[(digest, changes)] = shared
            shared.add_done_callback(self._looked_up((digest, changes)))
        found = await asyncio.shield(shared)  # a request cut short leaves it to the others
        if found is not None and changes == self._changes:
            self._keep(digest, found, now)
        return found

    def _looked_up(
        self, key: tuple[bytes, int]
    ) -> Callable[[asyncio.Future[Authenticated | None]], None]:
        def done(shared: asyncio.Future[Authenticated | None]) -> None:
            self._lookups.pop(key, None)
            if not shared.cancelled():
                shared.exception()  # its waiters, if any are left, have it

        return done

    def forget(self, key_id: str) -> None:
        """Drop every entry of ``key_id`` (a notice: it was rolled or revoked)."""
        self._changes += 1
        for digest, (found, _) in list(self._entries.items()):
            if found.key.id == key_id:
                del self._entries[digest]

    def clear(self) -> None:
        self._changes += 1
        self._entries.clear()

    def _keep(self, digest: bytes, found: Authenticated, now: float) -> None:
        if len(self._entries) >= MAX_ENTRIES:
            self._entries.clear()  # many distinct keys: keep none rather than grow without end
        self._entries[digest] = (found, now + self._ttl)

    @staticmethod
    def _still_good(found: Authenticated) -> bool:
        now_ms = int(time.time() * 1000)
        ends = [t for t in (found.until_ms, found.key.expires_ms) if t is not None]
        return all(now_ms < end for end in ends)

    def _touch(self, key_id: str) -> None:
        minute = int(time.time() // 60)
        if self._touched.get(key_id) == minute:
            return
        self._touched[key_id] = minute
        task = asyncio.create_task(self._ctx.api_keys.touch(key_id))
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._touched.clear()  # try again on the next request

    async def follow(self) -> None:
        """Drop announced keys until cancelled."""
        await follow(
            self._ctx.redis,
            self._ctx.keys.api_key_changes,
            lambda data: self.forget(_text(data)),
            on_subscribed=self.clear,
        )


def _text(data: object) -> str:
    return data.decode() if isinstance(data, bytes) else str(data)


KEY_CACHE = web.AppKey("key_cache", KeyCache)


def install(app: web.Application) -> None:
    cache = app[KEY_CACHE] = KeyCache(app[CONTEXT])
    app[CONTEXT].key_changes.local.append(cache.forget)
    app.cleanup_ctx.append(_follow)


async def _follow(app: web.Application) -> AsyncIterator[None]:
    task = asyncio.create_task(app[KEY_CACHE].follow(), name="api-key-notices")
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
