"""Per-key rate limits of ``/v1`` requests: a GCRA in Redis, decided on Redis's clock.

Each key may send ``SVC_RATE_LIMIT_LIVE`` (or ``_TEST``) requests per second, in bursts of up to
as many. Redis keeps one number per key, the theoretical arrival time of its next request, and
a Lua script decides on Redis's own clock, so every API process counts alike. Beyond the
limit: 429 ``rate_limited`` with ``Retry-After``. Every answer to a counted request carries
``RateLimit-Limit``, ``RateLimit-Remaining`` and ``RateLimit-Reset`` (seconds until the burst
is whole again). Redis holds only what may be lost: when it cannot answer, requests pass and
are counted in ``svc_rate_limit_bypassed_total``.

A key whose limit is below ``LEASE_FROM`` a second costs one Redis round trip per request and
is counted exactly. A key with a higher limit takes a lease: one round trip charges up to a
hundredth of its limit (at most ``LEASE_MOST`` requests) at once, and the process admits that
many of the key's requests without asking again, for at most ``LEASE_SECONDS``. Every
admitted request was charged in Redis first, so no key ever gets more than its limit, however
many processes serve it; a process holding a lease it does not use makes the key's limit
stricter by that much (at most a hundredth of it per process, for at most a second), and
``RateLimit-Remaining`` counts the leased requests as remaining. At a high limit, a round
trip per request would cost about a tenth of payment creation's CPU.
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass, replace

from aiohttp import web
from redis.asyncio import Redis
from redis.exceptions import RedisError

from api.middleware.auth import API_KEY
from api.problems import Handler, Problem
from svc.group_commit import Batcher
from svc.http import CONTEXT
from svc.rediskeys import Keys

log = logging.getLogger(__name__)

# KEYS: each request's key state, the theoretical arrival time of its next request (ms).
# ARGV: for each, its emission interval (ms), burst and how many requests it asks for (more
# than one for a lease). Returns, for each in order, {requests granted, remaining, retry after
# (ms), reset (ms)}, flattened: all it asked for when the burst has room, else as many as
# there is room for, else none. Requests of one key in one call are decided one after the
# other, as if they had come one by one.
_GCRA = """
local now = redis.call('TIME')
now = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local out = {}
for i, key in ipairs(KEYS) do
  local interval = tonumber(ARGV[3 * i - 2])
  local burst = tonumber(ARGV[3 * i - 1])
  local wanted = tonumber(ARGV[3 * i])
  local tat = tonumber(redis.call('GET', key) or now)
  if tat < now then tat = now end
  local granted = math.min(wanted, math.floor((now - tat) / interval + burst))
  while granted > 0 and now < tat + (granted - burst) * interval do granted = granted - 1 end
  if granted < 1 then
    table.insert(out, 0)
    table.insert(out, 0)
    table.insert(out, math.ceil(tat + (1 - burst) * interval - now))
    table.insert(out, math.ceil(tat - now))
  else
    local after = tat + granted * interval
    redis.call('SET', key, tostring(after), 'PX', math.ceil(after - now) + 1000)
    table.insert(out, granted)
    table.insert(out, math.floor((now - (after - burst * interval)) / interval))
    table.insert(out, 0)
    table.insert(out, math.ceil(after - now))
  end
end
return out
"""

LEASE_FROM = 200
"""Requests a second from which a key's requests are admitted from leases (a hundredth of the
limit, at least 2); below it, every request asks Redis."""
LEASE_MOST = 100
"""The most requests one lease holds."""
LEASE_SECONDS = 1.0
"""How long a process keeps the unused part of a lease."""


def lease_size(limit: int) -> int:
    """Requests one round trip to Redis asks for, for a key of ``limit`` a second."""
    return 1 if limit < LEASE_FROM else min(LEASE_MOST, limit // 100)


@dataclass(frozen=True, slots=True)
class Decision:
    admitted: bool
    limit: int
    remaining: int
    retry_after_ms: int
    reset_ms: int

    def headers(self) -> dict[str, str]:
        return {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(math.ceil(self.reset_ms / 1000)),
        }


class _Lease:
    """Requests of one key that Redis admitted in one call and this process has not used."""

    __slots__ = ("decision", "left", "until")

    def __init__(self, left: int, decision: Decision, until: float) -> None:
        self.left = left
        self.decision = decision
        """Redis's answer to the call: ``remaining`` counts none of the leased requests."""
        self.until = until

    def take(self, limit: int, now: float) -> Decision | None:
        """One of its requests, or None when it has none left, ran out or is of another limit."""
        if self.left < 1 or now >= self.until or limit != self.decision.limit:
            return None
        self.left -= 1
        return replace(self.decision, remaining=self.decision.remaining + self.left)


class RateLimiter:
    """Admits the requests of API keys, ``limit`` a second each with bursts of ``limit``.

    Requests that arrive while a call to Redis is under way are decided together in the next
    one (group commit): one round trip and one script run for many requests. A key with a
    limit of ``LEASE_FROM`` or more takes leases (see the module's docstring); while one of
    its leases is being asked for, its other requests wait for that lease rather than ask too.
    """

    def __init__(self, redis: Redis, keys: Keys) -> None:
        self._keys = keys
        self._script = redis.register_script(_GCRA)
        self._batcher: Batcher[tuple[str, int, int], tuple[Decision, int] | None] = Batcher(
            self._decide, 0
        )
        self._leases: dict[str, _Lease] = {}
        self._asking: dict[str, asyncio.Future[None]] = {}

    async def admit(self, key_id: str, limit: int) -> Decision | None:
        """The decision for one request of ``key_id``; None when Redis could not decide."""
        size = lease_size(limit)
        if size == 1:
            found = await self._batcher.submit((key_id, limit, 1))
            return None if found is None else found[0]
        loop = asyncio.get_running_loop()
        while True:
            lease = self._leases.get(key_id)
            if lease is not None:
                decision = lease.take(limit, loop.time())
                if decision is not None:
                    return decision
                del self._leases[key_id]
            asking = self._asking.get(key_id)
            if asking is None:
                break
            await asyncio.shield(asking)  # then take from the lease it brought, if any left
        asked = self._asking[key_id] = loop.create_future()
        try:
            found = await self._batcher.submit((key_id, limit, size))
        finally:
            del self._asking[key_id]
            asked.set_result(None)
        if found is None:
            return None
        decision, granted = found
        if granted > 1:
            self._leases[key_id] = _Lease(granted - 1, decision, loop.time() + LEASE_SECONDS)
            return replace(decision, remaining=decision.remaining + granted - 1)
        return decision

    async def _decide(
        self, requests: list[tuple[str, int, int]]
    ) -> list[tuple[Decision, int] | None]:
        keys = [self._keys.api_key_rate(key_id) for key_id, _, _ in requests]
        args = [value for _, limit, n in requests for value in (1000 / limit, limit, n)]
        try:
            found = await self._script(keys=keys, args=args)
        except RedisError as exc:
            log.warning("%d requests not rate limited (Redis: %s)", len(requests), exc)
            return [None] * len(requests)
        return [
            (
                Decision(
                    found[i] > 0, limit, int(found[i + 1]), int(found[i + 2]), int(found[i + 3])
                ),
                int(found[i]),
            )
            for i, (_, limit, _) in zip(range(0, len(found), 4), requests, strict=True)
        ]


LIMITER = web.AppKey("rate_limiter", RateLimiter)


@web.middleware
async def rate_limit_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Count a request of an API key against its limit; refuse it beyond."""
    key = request.get(API_KEY)
    if key is None:
        return await handler(request)
    ctx = request.app[CONTEXT]
    settings = ctx.settings
    limit = settings.rate_limit_live if key.env == "live" else settings.rate_limit_test
    if limit <= 0:
        return await handler(request)
    decision = await request.app[LIMITER].admit(key.id, limit)
    if decision is None:
        ctx.metrics.rate_limit_bypassed.inc()
        return await handler(request)
    headers = decision.headers()
    if not decision.admitted:
        retry_after = max(1, math.ceil(decision.retry_after_ms / 1000))
        detail = f"This API key sends more than {limit} requests a second; retry later."
        headers["Retry-After"] = str(retry_after)
        raise Problem(429, "rate_limited", detail, headers=headers)
    try:
        response = await handler(request)
    except Problem as problem:
        problem.headers.update(headers)
        raise
    except web.HTTPException as exc:
        exc.headers.update(headers)
        raise
    if not response.prepared:
        response.headers.update(headers)
    return response


def install(app: web.Application) -> None:
    ctx = app[CONTEXT]
    app[LIMITER] = RateLimiter(ctx.redis, ctx.keys)
