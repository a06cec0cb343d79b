"""Requests with an unknown API key, counted per client address in Redis; beyond a limit, 429.

Every request whose key is unknown (``invalid_api_key``) counts against its client address
for ``SVC_FAILED_AUTH_WINDOW``; one address may send ``SVC_FAILED_AUTH_LIMIT`` of them per
window. Beyond, a request whose key this process has not seen work lately is answered 429
``too_many_failed_auth`` with ``Retry-After`` (the rest of the window) before its key is
looked up, so a flood of made-up keys costs PostgreSQL nothing, on every API process alike.
A key the process resolved lately (``KeyCache.known``) is still served from a refused
address: a client sharing an address with an attacker keeps working.

The client address is the peer address of the connection. Behind proxies that append the
address they saw to ``X-Forwarded-For``, ``SVC_TRUSTED_PROXY_HOPS`` says how many: the
address is that entry from the right; anything a client wrote further left is ignored. An
IPv6 address counts as its /64, the least a client holds. Redis holds only what may be lost:
when it cannot answer, requests are not counted or refused.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import time

from aiohttp import hdrs, web
from redis.asyncio import Redis
from redis.exceptions import RedisError

from api.problems import Problem
from svc.http import CONTEXT
from svc.rediskeys import Keys
from svc.settings import Settings

log = logging.getLogger(__name__)

MAX_REFUSED = 10_000
"""Refused addresses this process remembers, so that their requests cost no round trip."""

# KEYS: the address's counter. ARGV: the window (ms). Returns {failures, ms left}.
_COUNT = """
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local left = redis.call('PTTL', KEYS[1])
if left < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  left = tonumber(ARGV[1])
end
return {n, left}
"""


class FailedAuth:
    """Counts unknown keys per client address and refuses addresses beyond the limit."""

    def __init__(self, redis: Redis, keys: Keys, settings: Settings) -> None:
        self._redis = redis
        self._keys = keys
        self._limit = settings.failed_auth_limit
        self._window_ms = max(1, round(settings.failed_auth_window * 1000))
        self._hops = settings.trusted_proxy_hops
        self._count = redis.register_script(_COUNT)
        self._refused: dict[str, float] = {}
        """Address → when (``time.monotonic``) its refusal ends, as Redis last told."""

    def address(self, request: web.Request) -> str:
        """The client address of ``request`` (see the module)."""
        found = request.remote or ""
        if self._hops > 0:
            forwarded = ",".join(request.headers.getall(hdrs.X_FORWARDED_FOR, ()))
            entries = [entry.strip() for entry in forwarded.split(",") if entry.strip()]
            if entries:
                found = entries[-min(self._hops, len(entries))]
        try:
            ip = ipaddress.ip_address(found)
        except ValueError:
            return found[:64]
        return str(ipaddress.ip_network(f"{ip}/64", strict=False)) if ip.version == 6 else str(ip)

    async def check(self, address: str) -> None:
        """Refuse ``address`` (429) while it is beyond its failures."""
        if self._limit <= 0:
            return
        ends = self._refused.get(address)
        now = time.monotonic()
        if ends is not None and now < ends:
            raise self._problem(ends - now)
        self._refused.pop(address, None)
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                pipe.get(self._keys.failed_auth(address))
                pipe.pttl(self._keys.failed_auth(address))
                count, left = await pipe.execute()
        except RedisError as exc:
            log.warning("failed authentications not checked (Redis: %s)", exc)
            return
        if count is not None and int(count) >= self._limit and left > 0:
            self._remember(address, left)
            raise self._problem(left / 1000)

    async def failed(self, address: str) -> None:
        """Count a request of ``address`` with an unknown key."""
        if self._limit <= 0:
            return
        try:
            count, left = await self._count(
                keys=[self._keys.failed_auth(address)], args=[self._window_ms]
            )
        except RedisError as exc:
            log.warning("failed authentication not counted (Redis: %s)", exc)
            return
        if int(count) >= self._limit:
            self._remember(address, int(left))

    def _remember(self, address: str, left_ms: int) -> None:
        if len(self._refused) >= MAX_REFUSED:
            self._refused.clear()  # many addresses: Redis still knows each
        self._refused[address] = time.monotonic() + left_ms / 1000

    def _problem(self, left_s: float) -> Problem:
        retry = str(max(1, math.ceil(left_s)))
        detail = "Too many requests with an unknown API key from this address; retry later."
        return Problem(429, "too_many_failed_auth", detail, headers={"Retry-After": retry})


FAILED_AUTH = web.AppKey("failed_auth", FailedAuth)


def install(app: web.Application) -> None:
    ctx = app[CONTEXT]
    app[FAILED_AUTH] = FailedAuth(ctx.redis, ctx.keys, ctx.settings)
