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
import ssl
import time
from dataclasses import dataclass, field

import orjson
from redis.asyncio import Redis
from yarl import URL

from dispatcher.signatures import Signing
from dispatcher.tls import context_of
from svc.addresses import always_blocked
from svc.destinations import Broker, broker_of, is_broker
from svc.pubsub import channel as notices
from svc.webhooks.filters import Matcher, compile_filter
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
    blocked_host: bool
    """The URL's host is one the API refuses at creation (checked once here, not per
    delivery): a stored URL may predate that check, or come from another version."""
    rate_limit: int | None = None
    ordered: bool = False
    disabled: bool = False
    filter: Filter | None = None
    """The events it takes (None: every event of its types)."""
    ssl: ssl.SSLContext | None = None
    """Its own TLS context: a client certificate, a CA bundle (None: the session's)."""
    broker: Broker | None = None
    """A RabbitMQ destination's broker (None: an HTTP receiver)."""


@dataclass(frozen=True, slots=True)
class Filter:
    """An endpoint's payload filter: ``key`` (its canonical JSON) is shared by the endpoints
    whose conditions are the same, so an event is matched once per distinct condition."""

    key: bytes
    matches: Matcher


@dataclass(slots=True)
class _Scope:
    expires: float
    by_id: dict[str, Target] = field(default_factory=dict)
    by_type: dict[str, list[Target]] = field(default_factory=dict)
    disabled_by_type: dict[str, list[Target]] = field(default_factory=dict)


def _target(endpoint: Endpoint) -> Target:
    url = URL(endpoint.url)
    broker = broker_of(endpoint.url, endpoint.url_password) if is_broker(endpoint.url) else None
    return Target(
        endpoint.id,
        url,
        _signing(endpoint),
        always_blocked(url.host or ""),
        endpoint.rate_limit,
        endpoint.ordered,
        endpoint.disabled,
        _filter(endpoint),
        _tls(endpoint),
        broker,
    )


def _tls(endpoint: Endpoint) -> ssl.SSLContext | None:
    try:
        return context_of(endpoint)
    except (ssl.SSLError, ValueError, OSError) as bad:  # checked by the API
        log.error("endpoint %s: its client certificate cannot be loaded (%s)", endpoint.id, bad)
        return ssl.create_default_context()  # no certificate: the receiver's refusal is logged


def _filter(endpoint: Endpoint) -> Filter | None:
    if not endpoint.filter:  # None or {}: every event
        return None
    try:
        matches = compile_filter(endpoint.filter)
    except ValueError as bad:  # checked by the API; a row written otherwise sends nothing
        log.error(
            "endpoint %s: its filter cannot be used (%s); it gets no events", endpoint.id, bad
        )
        return Filter(b"", lambda _envelope: False)
    return Filter(orjson.dumps(endpoint.filter, option=orjson.OPT_SORT_KEYS), matches)


def _signing(endpoint: Endpoint) -> Signing:
    custom = endpoint.headers or None
    try:
        return Signing(
            endpoint.signature_scheme,
            endpoint.secret,
            endpoint.previous_secret,
            endpoint.previous_secret_expires_ms,
            custom,
        )
    except ValueError:  # a secret from before Standard Webhooks mode: not base64
        log.error("endpoint %s: its secret cannot sign Standard Webhooks; rotate it", endpoint.id)
        return Signing("svc", endpoint.secret, endpoint.previous_secret, custom=custom)


class EndpointCache:
    """Subscribers and targets by scope; loads of one scope are shared by concurrent callers."""

    def __init__(self, endpoints: Endpoints, ttl: float) -> None:
        self._endpoints = endpoints
        self._ttl = ttl
        self._scopes: dict[tuple[str, str], _Scope] = {}
        self._loading: dict[tuple[str, str], asyncio.Task[_Scope]] = {}
        """The load of each scope whose result is kept: one started before a change notice
        for its scope (or a clear) is dropped from here, so it is neither kept nor waited for
        by callers that come after the notice."""
        self._tasks: set[asyncio.Task[_Scope]] = set()

    async def subscribers(self, org: str, env: str, event_type: str) -> list[Target]:
        """The endpoints of a scope subscribed to ``event_type``, now."""
        return (await self._scope(org, env)).by_type.get(event_type, [])

    async def subscribed(
        self, org: str, env: str, event_type: str
    ) -> tuple[list[Target], list[Target]]:
        """The enabled and the disabled endpoints of a scope subscribed to ``event_type``,
        now, from one look at the scope."""
        scope = await self._scope(org, env)
        return scope.by_type.get(event_type, []), scope.disabled_by_type.get(event_type, [])

    async def get(self, org: str, env: str, endpoint_id: str) -> Target | None:
        """An endpoint of a scope, or None when it no longer exists."""
        return (await self._scope(org, env)).by_id.get(endpoint_id)

    async def close(self) -> None:
        """Cancel loads still running."""
        tasks = set(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    def invalidate(self, org: str, env: str) -> None:
        self._scopes.pop((org, env), None)
        self._loading.pop((org, env), None)

    def clear(self) -> None:
        self._scopes.clear()
        self._loading.clear()

    async def _scope(self, org: str, env: str) -> _Scope:
        key = (org, env)
        hit = self._scopes.get(key)
        if hit is not None:
            if hit.expires <= time.monotonic() and key not in self._loading:
                self._start(key, hit)  # in the background; the stale copy serves meanwhile
            return hit
        loading = self._loading.get(key) or self._start(key)
        return await asyncio.shield(loading)

    def _start(self, key: tuple[str, str], stale: _Scope | None = None) -> asyncio.Task[_Scope]:
        """Load one scope from PostgreSQL, shared by everyone asking for it meanwhile.

        The task is registered before this returns, so callers in the same turn of the event
        loop share it rather than start loads of their own. A caller that is cancelled does
        not cancel the load the others wait for.
        """
        task = asyncio.create_task(self._load_and_keep(key))
        self._loading[key] = task
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._loaded(done, key, stale))
        return task

    def _loaded(
        self, task: asyncio.Task[_Scope], key: tuple[str, str], stale: _Scope | None
    ) -> None:
        self._tasks.discard(task)
        if self._loading.get(key) is task:
            del self._loading[key]
        if task.cancelled():
            return
        error = task.exception()  # retrieved here even when no caller is left to see it
        if error is not None and stale is not None:
            log.warning("reloading the endpoints of %s failed: %s", key, error)
            stale.expires = time.monotonic() + RELOAD_RETRY

    async def _load_and_keep(self, key: tuple[str, str]) -> _Scope:
        scope = await self._load(*key)
        if self._loading.get(key) is asyncio.current_task():  # no notice came meanwhile
            if len(self._scopes) >= MAX_SCOPES:
                self._scopes.clear()
            self._scopes[key] = scope
        return scope

    async def _load(self, org: str, env: str) -> _Scope:
        scope = _Scope(time.monotonic() + self._ttl)
        for endpoint in await self._endpoints.in_scope(org, env):
            target = _target(endpoint)
            scope.by_id[target.id] = target
            # A disabled endpoint gets no deliveries: its events are logged as skipped.
            by_type = scope.disabled_by_type if target.disabled else scope.by_type
            for event_type in endpoint.events:
                by_type.setdefault(event_type, []).append(target)
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
