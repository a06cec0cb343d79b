"""Per-key rate limits of ``/v1`` requests: a GCRA in Redis, one round trip per request.

Each key may send ``SVC_RATE_LIMIT_LIVE`` (or ``_TEST``) requests per second, in bursts of up to
as many. Redis keeps one number per key, the theoretical arrival time of its next request, and
a Lua script decides on Redis's own clock, so every API process counts alike. Beyond the
limit: 429 ``rate_limited`` with ``Retry-After``. Every answer to a counted request carries
``RateLimit-Limit``, ``RateLimit-Remaining`` and ``RateLimit-Reset`` (seconds until the burst
is whole again). Redis holds only what may be lost: when it cannot answer, requests pass and
are counted in ``svc_rate_limit_bypassed_total``.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from aiohttp import web
from redis.asyncio import Redis
from redis.exceptions import RedisError

from api.middleware.auth import API_KEY
from api.problems import Handler, Problem
from svc.http import CONTEXT
from svc.rediskeys import Keys

log = logging.getLogger(__name__)

# KEYS[1]: the key's theoretical arrival time (ms). ARGV: emission interval (ms), burst.
# Returns {admitted, remaining, retry after (ms), reset (ms)}.
_GCRA = """
local now = redis.call('TIME')
now = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local after = tat + interval
local allowed_at = after - burst * interval
if now < allowed_at then
  return {0, 0, math.ceil(allowed_at - now), math.ceil(tat - now)}
end
redis.call('SET', KEYS[1], tostring(after), 'PX', math.ceil(after - now) + 1000)
return {1, math.floor((now - allowed_at) / interval), 0, math.ceil(after - now)}
"""


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


class RateLimiter:
    """Admits the requests of API keys, ``limit`` a second each with bursts of ``limit``."""

    def __init__(self, redis: Redis, keys: Keys) -> None:
        self._keys = keys
        self._script = redis.register_script(_GCRA)

    async def admit(self, key_id: str, limit: int) -> Decision | None:
        """The decision for one request of ``key_id``; None when Redis could not decide."""
        try:
            admitted, remaining, retry_after, reset = await self._script(
                keys=[self._keys.api_key_rate(key_id)], args=[1000 / limit, limit]
            )
        except RedisError as exc:
            log.warning("request of %s not rate limited (Redis: %s)", key_id, exc)
            return None
        return Decision(bool(admitted), limit, int(remaining), int(retry_after), int(reset))


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
