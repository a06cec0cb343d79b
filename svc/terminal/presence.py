"""Leases in Redis that may be lost: a device connection's liveness and simulator ownership.

Losing them (a Redis restart, ``FLUSHALL``) costs seconds, never a record: a live
connection renews its lease within a third of its time to live and re-asserts its
terminal's presence, and simulator hosts take their leases again.
"""

from __future__ import annotations

from redis.asyncio import Redis

from svc.rediskeys import Keys

# Renew the lease only when it is still ours: a process that lost it must stop its simulator.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) and 1 or 0
"""


class Presence:
    """Liveness and simulator leases."""

    def __init__(self, redis: Redis, keys: Keys) -> None:
        self._redis = redis
        self._keys = keys

    async def keep_alive(self, terminal_id: str, conn: str, ttl_s: float) -> None:
        """The holder of ``conn`` is alive; without renewal the terminal goes offline."""
        await self._redis.set(self._keys.terminal_alive(terminal_id), conn, px=int(ttl_s * 1000))

    async def holders(self, terminal_ids: list[str]) -> list[str | None]:
        """The live connection of each terminal, None where no lease is held."""
        if not terminal_ids:
            return []
        found = await self._redis.mget([self._keys.terminal_alive(i) for i in terminal_ids])
        return [
            None if v is None else v.decode() if isinstance(v, bytes) else str(v) for v in found
        ]

    async def take_lease(self, terminal_id: str, owner: str, ttl_s: float) -> bool:
        """Take or renew the lease to run this simulation terminal; False when another has it."""
        result = await self._redis.eval(
            _RENEW, 1, self._keys.simulator_lease(terminal_id), owner, int(ttl_s * 1000)
        )
        return bool(result)

    async def release_lease(self, terminal_id: str, owner: str) -> None:
        key = self._keys.simulator_lease(terminal_id)
        found = await self._redis.get(key)
        if found is not None and (found.decode() if isinstance(found, bytes) else found) == owner:
            await self._redis.delete(key)
