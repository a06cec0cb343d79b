"""The delivery log: one record per attempt, readable per event and per endpoint, newest first.

Each attempt is appended to two Redis streams (the event's, kept as long as the event, and
the endpoint's, capped in length); stream ids are the pagination cursors. Per event, a hash
holds each endpoint's delivery state (``succeeded``, ``failed`` with a next attempt, or
``exhausted``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import orjson
from redis.asyncio import Redis

from svc.events import iso_ms
from svc.store.keys import Keys
from svc.store.values import text

# One call per batch: ARGV = retention ms, endpoint log cap, JSON list of
# [event log key, endpoint log key, status key, endpoint id, record JSON, status JSON].
_RECORD = """
local retention, cap = ARGV[1], ARGV[2]
for _, item in ipairs(cjson.decode(ARGV[3])) do
  redis.call('XADD', item[1], '*', 'a', item[5])
  redis.call('PEXPIRE', item[1], retention)
  redis.call('XADD', item[2], 'MAXLEN', '~', cap, '*', 'a', item[5])
  redis.call('HSET', item[3], item[4], item[6])
  redis.call('PEXPIRE', item[3], retention)
end
return 0
"""


@dataclass(frozen=True, slots=True)
class Attempt:
    """One delivery attempt as logged."""

    id: str
    event_id: str
    event_type: str
    endpoint_id: str
    attempt: int
    trigger: str
    outcome: str
    status_code: int | None
    error: str | None
    duration_ms: float
    response_body: str
    attempted_ms: int
    next_attempt_ms: int | None

    def public(self) -> dict[str, Any]:
        data = asdict(self)
        data["object"] = "delivery_attempt"
        data["attempted_at"] = iso_ms(data.pop("attempted_ms"))
        next_ms = data.pop("next_attempt_ms")
        data["next_attempt_at"] = None if next_ms is None else iso_ms(next_ms)
        return data


class DeliveryLog:
    """Writes and pages the delivery log."""

    def __init__(self, redis: Redis, keys: Keys, retention_s: float, endpoint_cap: int) -> None:
        self._redis = redis
        self._keys = keys
        self._retention_ms = int(retention_s * 1000)
        self._endpoint_cap = endpoint_cap
        self._script = redis.register_script(_RECORD)

    async def record(self, attempts: Sequence[Attempt]) -> list[None]:
        """Write a batch of attempts in one round trip and one command.

        The whole batch travels as one JSON argument of a script: the dispatcher's hot path
        then packs and parses one command per batch instead of five per attempt.
        """
        keys = self._keys
        batch = [
            (
                keys.event_log(a.event_id),
                keys.endpoint_log(a.endpoint_id),
                keys.event_status(a.event_id),
                a.endpoint_id,
                orjson.dumps(a).decode(),
                orjson.dumps(_status(a)).decode(),
            )
            for a in attempts
        ]
        await self._script(args=[self._retention_ms, self._endpoint_cap, orjson.dumps(batch)])
        return [None] * len(attempts)

    async def mark_exhausted(self, event_id: str, endpoint_id: str, attempts: int) -> None:
        """The retry window closed for this event and endpoint."""
        key = self._keys.event_status(event_id)
        raw = await self._redis.hget(key, endpoint_id)
        status: dict[str, Any] = {"endpoint_id": endpoint_id} if raw is None else orjson.loads(raw)
        status.update(state="exhausted", attempts=attempts, next_attempt_ms=None)
        await self._redis.hset(key, endpoint_id, orjson.dumps(status))

    async def statuses(self, event_id: str) -> list[dict[str, Any]]:
        """Per-endpoint delivery state of one event."""
        raw = await self._redis.hgetall(self._keys.event_status(event_id))
        found = (_public_status(orjson.loads(v)) for v in raw.values())
        return sorted(found, key=lambda s: s["endpoint_id"])

    async def for_event(
        self, event_id: str, limit: int, cursor: str | None
    ) -> tuple[list[dict[str, Any]], str | None]:
        return await self._page(self._keys.event_log(event_id), limit, cursor)

    async def for_endpoint(
        self, endpoint_id: str, limit: int, cursor: str | None
    ) -> tuple[list[dict[str, Any]], str | None]:
        return await self._page(self._keys.endpoint_log(endpoint_id), limit, cursor)

    async def _page(
        self, key: str, limit: int, cursor: str | None
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Records newest first and the cursor of the next page (None on the last page)."""
        high = "+" if cursor is None else f"({cursor}"
        rows: Any = await self._redis.xrevrange(key, high, "-", count=limit + 1)
        records = [Attempt(**orjson.loads(fields[b"a"])).public() for _, fields in rows[:limit]]
        more = len(rows) > limit
        return records, (text(rows[limit - 1][0]) if more else None)


def _status(attempt: Attempt) -> dict[str, Any]:
    """The stored delivery state of one endpoint after ``attempt`` (times in ms)."""
    succeeded = attempt.outcome == "success"
    return {
        "endpoint_id": attempt.endpoint_id,
        "state": "succeeded" if succeeded else "failed",
        "attempts": attempt.attempt,
        "last_attempt_ms": attempt.attempted_ms,
        "last_status_code": attempt.status_code,
        "last_error": attempt.error,
        "next_attempt_ms": None if succeeded else attempt.next_attempt_ms,
    }


def _public_status(stored: dict[str, Any]) -> dict[str, Any]:
    last_ms, next_ms = stored.pop("last_attempt_ms", None), stored.pop("next_attempt_ms", None)
    stored["last_attempt_at"] = None if last_ms is None else iso_ms(last_ms)
    stored["next_attempt_at"] = None if next_ms is None else iso_ms(next_ms)
    return stored
