"""Terminals in PostgreSQL, and the leases in Redis that prove a device connection or a
simulator still runs; device secrets are stored as SHA-256 digests only.

Presence (``status`` and the holding connection ``conn``) is part of the record, so it
survives a cache flush. The leases may be lost: losing them (a Redis restart, ``FLUSHALL``)
costs seconds, never a record, since a live connection renews its lease within a third of
its time to live and re-asserts its terminal's presence, and simulator hosts take their
leases again.
"""

from __future__ import annotations

import time
from typing import Any

from redis.asyncio import Redis

from svc.crypto import digest
from svc.db import Database, Queries, Unit
from svc.db.times import to_dt, to_ms
from svc.ids import new_id, new_secret
from svc.orgs.model import Scope
from svc.rediskeys import Keys
from svc.terminal.model import SECRET_PREFIX, SIMULATOR_NAME, Terminal

# Renew the lease only when it is still ours: a process that lost it must stop its simulator.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) and 1 or 0
"""
_COLUMNS = (
    "id, org_id, env, name, simulated, status, conn, current_payment_id, "
    "created_at, status_changed_at"
)


def _terminal(row: Any) -> Terminal:
    return Terminal(
        id=row["id"],
        org=row["org_id"],
        env=row["env"],
        name=row["name"],
        simulated=row["simulated"],
        status=row["status"],
        conn=row["conn"],
        current=row["current_payment_id"] or "",
        created_ms=to_ms(row["created_at"]),
        status_ms=to_ms(row["status_changed_at"]),
    )


class Terminals:
    """Terminal storage; client reads go through ``get_scoped`` and ``in_scope``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, terminal_id: str, q: Queries | None = None) -> Terminal | None:
        row = await (q or self._db).fetchrow(
            f"SELECT {_COLUMNS} FROM terminals WHERE id = $1", terminal_id
        )
        return None if row is None else _terminal(row)

    async def get_scoped(self, scope: Scope, terminal_id: str) -> Terminal | None:
        terminal = await self.get(terminal_id)
        if terminal is None or (terminal.org, terminal.env) != (scope.org, scope.env):
            return None
        return terminal

    async def lock(self, unit: Unit, terminal_id: str) -> Terminal | None:
        """The terminal, locked until ``unit`` ends."""
        row = await unit.fetchrow(
            f"SELECT {_COLUMNS} FROM terminals WHERE id = $1 FOR UPDATE", terminal_id
        )
        return None if row is None else _terminal(row)

    async def in_scope(self, scope: Scope) -> list[Terminal]:
        rows = await self._db.fetch(
            f"""SELECT {_COLUMNS} FROM terminals WHERE org_id = $1 AND env = $2
                ORDER BY created_at, id""",
            scope.org,
            scope.env,
        )
        return [_terminal(row) for row in rows]

    async def register(
        self, scope: Scope, name: str, simulated: bool = False
    ) -> tuple[Terminal, str]:
        """A new (offline) terminal and its device secret, which is returned only here."""
        now = int(time.time() * 1000)
        terminal = Terminal(
            new_id("trm"), scope.org, scope.env, name, simulated, "offline", "", "", now, now
        )
        secret = new_secret(SECRET_PREFIX, 32)
        await self._insert(self._db, terminal, secret)
        return terminal, secret

    async def _insert(self, q: Queries, terminal: Terminal, secret: str) -> bool:
        status = await q.execute(
            """INSERT INTO terminals (id, org_id, env, name, simulated, status, secret_digest,
                                      created_at, status_changed_at)
               VALUES ($1, $2, $3, $4, $5, 'offline', $6, $7, $7)
               ON CONFLICT DO NOTHING""",
            terminal.id,
            terminal.org,
            terminal.env,
            terminal.name,
            terminal.simulated,
            digest(secret),
            to_dt(terminal.created_ms),
        )
        return status == "INSERT 0 1"

    async def ensure_simulated(self, org: str) -> tuple[str, bool]:
        """The id of ``org``'s test-environment simulation terminal; True when just created."""
        now = int(time.time() * 1000)
        candidate = Terminal(
            new_id("trm"), org, "test", SIMULATOR_NAME, True, "offline", "", "", now, now
        )
        created = await self._insert(self._db, candidate, new_secret(SECRET_PREFIX, 32))
        if created:
            return candidate.id, True
        found = await self._db.fetchval(
            "SELECT id FROM terminals WHERE org_id = $1 AND simulated", org
        )
        return str(found), False

    async def simulated_ids(self) -> list[str]:
        rows = await self._db.fetch("SELECT id FROM terminals WHERE simulated ORDER BY id")
        return [row["id"] for row in rows]

    async def authenticate(self, secret: str) -> Terminal | None:
        """The terminal whose device secret is ``secret``."""
        if not secret.startswith(SECRET_PREFIX):
            return None
        row = await self._db.fetchrow(
            f"SELECT {_COLUMNS} FROM terminals WHERE secret_digest = $1", digest(secret)
        )
        return None if row is None else _terminal(row)

    async def rotate_secret(self, terminal_id: str) -> str:
        """A new device secret for the terminal; the old one stops working."""
        secret = new_secret(SECRET_PREFIX, 32)
        await self._db.execute(
            "UPDATE terminals SET secret_digest = $2 WHERE id = $1", terminal_id, digest(secret)
        )
        return secret

    async def set_current(self, unit: Unit, terminal_id: str, payment_id: str | None) -> None:
        await unit.execute(
            "UPDATE terminals SET current_payment_id = $2 WHERE id = $1", terminal_id, payment_id
        )

    async def set_presence(self, unit: Unit, terminal: Terminal) -> None:
        """Write ``status``, ``conn`` and ``status_ms`` of a terminal locked in ``unit``."""
        await unit.execute(
            "UPDATE terminals SET status = $2, conn = $3, status_changed_at = $4 WHERE id = $1",
            terminal.id,
            terminal.status,
            terminal.conn,
            to_dt(terminal.status_ms),
        )

    async def online(self) -> list[Terminal]:
        rows = await self._db.fetch(
            f"SELECT {_COLUMNS} FROM terminals WHERE status = 'online' ORDER BY id"
        )
        return [_terminal(row) for row in rows]


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
