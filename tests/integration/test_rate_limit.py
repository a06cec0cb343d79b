"""The rate limiter against a real Redis: exact below ``LEASE_FROM``, leased above, and never
more than a key's limit however many processes admit its requests."""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

from api.middleware import rate_limit
from api.middleware.rate_limit import Decision, RateLimiter, lease_size
from svc.context import Context


class _Counting(RateLimiter):
    """A limiter that counts its round trips to Redis."""

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx.redis, ctx.keys)
        self.calls = 0

    async def _decide(self, requests: list[tuple[str, int, int]]) -> list[Any]:
        self.calls += 1
        return await super()._decide(requests)


def test_only_high_limits_are_leased() -> None:
    assert [lease_size(n) for n in (1, 25, 100, 199)] == [1, 1, 1, 1]
    assert [lease_size(n) for n in (200, 1_000, 10_000, 1_000_000)] == [2, 10, 100, 100]


async def test_a_low_limit_asks_redis_for_every_request(ctx: Context) -> None:
    limiter = _Counting(ctx)
    decisions = [await limiter.admit("key_low", 5) for _ in range(6)]
    assert [d.admitted for d in decisions if d] == [True] * 5 + [False]
    assert [d.remaining for d in decisions[:5] if d] == [4, 3, 2, 1, 0]
    assert limiter.calls == 6


async def test_a_high_limit_takes_leases_and_counts_them_as_remaining(ctx: Context) -> None:
    limiter = _Counting(ctx)
    decisions = await asyncio.gather(*(limiter.admit("key_high", 1_000) for _ in range(250)))
    assert all(d is not None and d.admitted for d in decisions)
    assert limiter.calls == 25  # leases of 10; the others waited for the lease being asked
    first = [d for d in decisions if d is not None][:10]
    # The first lease: Redis left 990 of the burst, the process holds 9 of its 10.
    assert [d.remaining for d in first] == list(range(999, 989, -1))


async def test_leases_never_admit_more_than_the_limit(ctx: Context) -> None:
    """Two processes (limiters) leasing one key's requests: together they admit the burst and
    what the elapsed time gave back, at most, and lose no more than their unused leases."""
    limit, key = 300, "key_shared"
    processes = [RateLimiter(ctx.redis, ctx.keys), RateLimiter(ctx.redis, ctx.keys)]
    started = time.monotonic()
    decisions: list[Decision | None] = await asyncio.gather(
        *(processes[i % 2].admit(key, limit) for i in range(450))
    )
    elapsed_ms = (time.monotonic() - started) * 1000
    admitted = sum(1 for d in decisions if d is not None and d.admitted)
    refused = [d for d in decisions if d is not None and not d.admitted]
    given_back = math.ceil(elapsed_ms / (1000 / limit)) + 1
    held = len(processes) * (lease_size(limit) - 1)
    assert limit - held <= admitted <= limit + given_back
    if limit + given_back < len(decisions):  # on a busy machine the burst may take long enough
        assert refused  # to be given back whole; otherwise some must be refused
    assert all(d.retry_after_ms > 0 for d in refused)


def test_a_lease_ends_after_its_time_and_with_another_limit() -> None:
    lease = rate_limit._Lease(2, Decision(True, 1_000, 990, 0, 10), until=100.0)
    taken = lease.take(1_000, 99.0)
    assert taken is not None and (taken.admitted, taken.remaining) == (True, 991)
    assert lease.take(2_000, 99.0) is None  # the key's limit changed: ask Redis again
    assert lease.take(1_000, 100.0) is None  # its time is over
    last = lease.take(1_000, 99.5)
    assert last is not None and last.remaining == 990
    assert lease.take(1_000, 99.6) is None  # none left
