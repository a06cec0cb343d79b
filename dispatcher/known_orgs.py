"""Which organisation ids exist: an in-process cache in front of PostgreSQL.

An id found is trusted for ``known_ttl`` seconds, an id not found for ``unknown_ttl`` seconds
only, so an organisation created a moment ago is accepted again within seconds. Lookups that
miss the cache at the same moment share one query.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from svc.group_commit import Batcher

KNOWN_TTL = 60.0
UNKNOWN_TTL = 3.0
GATHER = 0.001
# A producer sending ever new unknown ids must not grow the cache without bound.
MAX_ENTRIES = 10_000

Existing = Callable[[list[str]], Awaitable[set[str]]]


class KnownOrganisations:
    """Answers "does this organisation exist?" with at most one query per batch of misses."""

    def __init__(
        self,
        existing: Existing,
        known_ttl: float = KNOWN_TTL,
        unknown_ttl: float = UNKNOWN_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._existing = existing
        self._ttl = {True: known_ttl, False: unknown_ttl}
        self._clock = clock
        self._cached: dict[str, tuple[bool, float]] = {}  # id -> (exists, valid until)
        self._lookups = Batcher(self._look_up, GATHER)

    async def exists(self, org_id: str) -> bool:
        cached = self._cached.get(org_id)
        if cached is not None and cached[1] > self._clock():
            return cached[0]
        return await self._lookups.submit(org_id)

    async def _look_up(self, ids: list[str]) -> list[bool]:
        distinct = sorted(set(ids))
        found = await self._existing(distinct)
        now = self._clock()
        if len(self._cached) + len(distinct) > MAX_ENTRIES:
            self._cached = {k: v for k, v in self._cached.items() if v[1] > now}
            if len(self._cached) + len(distinct) > MAX_ENTRIES:
                self._cached.clear()
        for org_id in distinct:
            exists = org_id in found
            self._cached[org_id] = (exists, now + self._ttl[exists])
        return [org_id in found for org_id in ids]
