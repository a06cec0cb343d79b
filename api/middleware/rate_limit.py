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
from svc.group_commit import Batcher
from svc.http import CONTEXT
from svc.rediskeys import Keys

log = logging.getLogger(__name__)

# KEYS: each request's key state, the theoretical arrival time of its next request (ms).
# ARGV: for each, its emission interval (ms) and burst. Returns, for each in order,
# {admitted, remaining, retry after (ms), reset (ms)}, flattened. Requests of one key in one
# call are decided one after the other, as if they had come one by one.
_GCRA = """
local now = redis.call('TIME')
now = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local out = {}
for i, key in ipairs(KEYS) do
  local interval = tonumber(ARGV[2 * i - 1])
  local burst = tonumber(ARGV[2 * i])
  local tat = tonumber(redis.call('GET', key) or now)
  if tat < now then tat = now end
  local after = tat + interval
  local allowed_at = after - burst * interval
  if now < allowed_at then
    table.insert(out, 0)
    table.insert(out, 0)
    table.insert(out, math.ceil(allowed_at - now))
    table.insert(out, math.ceil(tat - now))
  else
    redis.call('SET', key, tostring(after), 'PX', math.ceil(after - now) + 1000)
    table.insert(out, 1)
    table.insert(out, math.floor((now - allowed_at) / interval))
    table.insert(out, 0)
    table.insert(out, math.ceil(after - now))
  end
end
return out
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
    """Admits the requests of API keys, ``limit`` a second each with bursts of ``limit``.

    Requests that arrive while a call to Redis is under way are decided together in the next
    one (group commit): one round trip and one script run for many requests, which is what
    keeps the limit's cost to payment creation small.
    """

    def __init__(self, redis: Redis, keys: Keys) -> None:
        self._keys = keys
        self._script = redis.register_script(_GCRA)
        self._batcher: Batcher[tuple[str, int], Decision | None] = Batcher(self._decide, 0)

    async def admit(self, key_id: str, limit: int) -> Decision | None:
        """The decision for one request of ``key_id``; None when Redis could not decide."""
        return await self._batcher.submit((key_id, limit))

    async def _decide(self, requests: list[tuple[str, int]]) -> list[Decision | None]:
        keys = [self._keys.api_key_rate(key_id) for key_id, _ in requests]
        args = [value for _, limit in requests for value in (1000 / limit, limit)]
        try:
            found = await self._script(keys=keys, args=args)
        except RedisError as exc:
            log.warning("%d requests not rate limited (Redis: %s)", len(requests), exc)
            return [None] * len(requests)
        return [
            Decision(bool(found[i]), limit, int(found[i + 1]), int(found[i + 2]), int(found[i + 3]))
            for i, (_, limit) in zip(range(0, len(found), 4), requests, strict=True)
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
