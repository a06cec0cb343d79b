"""Endpoints for the hot path: every endpoint of a scope, parsed and pre-keyed, in memory.

A scope (organisation, environment) is loaded from PostgreSQL once and kept until a change
notice for it arrives on Redis pub/sub (the API announces each change after its commit), or
its time to live (``SVC_ENDPOINT_CACHE_TTL``) runs out: a lost notice only delays a change
by that. After the subscription to notices is lost, everything is dropped.

A notice drops its scope at once, so the next event of that scope waits for a fresh load. A
scope whose time ran out, though, goes on serving while one reload runs in the background:
the time to live is only the backstop for a lost notice, and making every event of a busy
scope wait for PostgreSQL every few seconds put those waits into the delivery p99. A reload
that fails leaves the old copy serving and is tried again a second later.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

import orjson
from redis.asyncio import Redis
from yarl import URL

from dispatcher import notices
from dispatcher.signatures import Signing
from svc.addresses import literal_blocked
from svc.webhooks.model import Endpoint
from svc.webhooks.store import Endpoints

log = logging.getLogger(__name__)

MAX_SCOPES = 50_000
RELOAD_RETRY = 1.0
"""Seconds before a failed background reload of an expired scope is tried again."""


@dataclass(frozen=True, slots=True)
class Target:
    """What sending needs from an endpoint."""

    id: str
    url: URL
    signing: Signing
    private_literal: bool
    """The URL names a non-public IP literal (checked once here, not per delivery)."""
    rate_limit: int | None = None
    ordered: bool = False
    disabled: bool = False


@dataclass(slots=True)
class _Scope:
    expires: float
    by_id: dict[str, Target] = field(default_factory=dict)
    by_type: dict[str, list[Target]] = field(default_factory=dict)


def _target(endpoint: Endpoint) -> Target:
    url = URL(endpoint.url)
    return Target(
        endpoint.id,
        url,
        _signing(endpoint),
        literal_blocked(url.host or ""),
        endpoint.rate_limit,
        endpoint.ordered,
        endpoint.disabled,
    )


def _signing(endpoint: Endpoint) -> Signing:
    try:
        return Signing(
            endpoint.signature_scheme,
            endpoint.secret,
            endpoint.previous_secret,
            endpoint.previous_secret_expires_ms,
        )
    except ValueError:  # a secret from before Standard Webhooks mode: not base64
        log.error("endpoint %s: its secret cannot sign Standard Webhooks; rotate it", endpoint.id)
        return Signing("svc", endpoint.secret, endpoint.previous_secret)


class EndpointCache:
    """Subscribers and targets by scope; loads of one scope are shared by concurrent callers."""

    def __init__(self, endpoints: Endpoints, ttl: float) -> None:
        self._endpoints = endpoints
        self._ttl = ttl
        self._scopes: dict[tuple[str, str], _Scope] = {}
        self._loading: dict[tuple[str, str], asyncio.Future[_Scope]] = {}
        self._reloads: set[asyncio.Task[_Scope]] = set()
        self._generation = 0

    async def subscribers(self, org: str, env: str, event_type: str) -> list[Target]:
        """The endpoints of a scope subscribed to ``event_type``, now."""
        return (await self._scope(org, env)).by_type.get(event_type, [])

    async def get(self, org: str, env: str, endpoint_id: str) -> Target | None:
        """An endpoint of a scope, or None when it no longer exists."""
        return (await self._scope(org, env)).by_id.get(endpoint_id)

    async def close(self) -> None:
        """Cancel reloads still running in the background."""
        for task in list(self._reloads):
            task.cancel()
        if self._reloads:
            await asyncio.wait(set(self._reloads))

    def invalidate(self, org: str, env: str) -> None:
        self._scopes.pop((org, env), None)
        self._generation += 1

    def clear(self) -> None:
        self._scopes.clear()
        self._generation += 1

    async def _scope(self, org: str, env: str) -> _Scope:
        key = (org, env)
        hit = self._scopes.get(key)
        if hit is not None:
            if hit.expires <= time.monotonic() and key not in self._loading:
                self._reload(key, hit)
            return hit
        pending = self._loading.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        return await self._fetch(key)

    def _reload(self, key: tuple[str, str], stale: _Scope) -> None:
        """Load an expired scope again in the background; the stale copy serves meanwhile."""
        task = asyncio.create_task(self._fetch(key))
        self._reloads.add(task)
        task.add_done_callback(lambda done: self._reloaded(done, key, stale))

    def _reloaded(self, task: asyncio.Task[_Scope], key: tuple[str, str], stale: _Scope) -> None:
        self._reloads.discard(task)
        if task.cancelled() or task.exception() is None:
            return
        log.warning("reloading the endpoints of %s failed: %s", key, task.exception())
        stale.expires = time.monotonic() + RELOAD_RETRY

    async def _fetch(self, key: tuple[str, str]) -> _Scope:
        """Load one scope from PostgreSQL, shared by everyone asking for it meanwhile."""
        org, env = key
        future: asyncio.Future[_Scope] = asyncio.get_running_loop().create_future()
        self._loading[key] = future
        generation = self._generation
        try:
            scope = await self._load(org, env)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as exc:
            future.set_exception(exc)
            future.exception()  # marked retrieved here; waiters re-raise it
            raise
        finally:
            del self._loading[key]
        future.set_result(scope)
        if generation == self._generation:  # no change was announced while it loaded
            if len(self._scopes) >= MAX_SCOPES:
                self._scopes.clear()
            self._scopes[key] = scope
        return scope

    async def _load(self, org: str, env: str) -> _Scope:
        scope = _Scope(time.monotonic() + self._ttl)
        for endpoint in await self._endpoints.in_scope(org, env):
            target = _target(endpoint)
            scope.by_id[target.id] = target
            if target.disabled:
                continue  # no new jobs; its jobs already queued are dropped by the worker
            for event_type in endpoint.events:
                scope.by_type.setdefault(event_type, []).append(target)
        return scope

    async def follow(self, redis: Redis, channel: str) -> None:
        """Drop scopes as change notices arrive, until cancelled; everything is dropped after
        a (re)subscription, since notices may have been missed before it."""
        await notices.follow(redis, channel, self._notice, self.clear)

    def _notice(self, data: object) -> None:
        try:
            org, env = orjson.loads(data)  # type: ignore[arg-type]
        except (ValueError, TypeError):
            self.clear()
            return
        self.invalidate(str(org), str(env))
