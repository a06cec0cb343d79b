"""Terminals: records, device secrets, online/offline presence and simulator leases.

A terminal is online while a device connection holds it (``conn`` names that connection);
the payment it is working on is ``current``. Presence changes stage ``terminal.online`` or
``terminal.offline`` in the same transaction; the caller publishes the returned event.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline
from redis.typing import EncodableT, FieldT

from svc import signals
from svc.events import Event, iso_ms, new_event
from svc.ids import new_id, new_secret
from svc.store.apikeys import Scope
from svc.store.events import Events
from svc.store.keys import Keys
from svc.store.txn import transact
from svc.store.values import text

SECRET_PREFIX = "trmsec_"
SIMULATOR_NAME = "Simulation terminal"

# Renew the lease only when it is still ours: a process that lost it must stop its simulator.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) and 1 or 0
"""


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Terminal:
    """A terminal record."""

    id: str
    org: str
    env: str
    name: str
    simulated: bool
    status: str
    conn: str
    current: str
    created_ms: int
    status_ms: int

    @property
    def online(self) -> bool:
        return self.status == "online"

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "terminal",
            "name": self.name,
            "status": self.status,
            "simulated": self.simulated,
            "environment": self.env,
            "current_payment_id": self.current or None,
            "created_at": iso_ms(self.created_ms),
            "status_changed_at": iso_ms(self.status_ms),
        }

    def event_data(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "terminal",
            "status": self.status,
            "name": self.name,
            "simulated": self.simulated,
        }


def parse(raw: dict[Any, Any]) -> Terminal:
    fields = {text(k): text(v) for k, v in raw.items()}
    return Terminal(
        id=fields["id"],
        org=fields["org"],
        env=fields["env"],
        name=fields["name"],
        simulated=fields["simulated"] == "1",
        status=fields["status"],
        conn=fields.get("conn", ""),
        current=fields.get("current", ""),
        created_ms=int(fields["created_ms"]),
        status_ms=int(fields["status_ms"]),
    )


class Terminals:
    """Terminal storage; reads for clients go through ``get_scoped``."""

    def __init__(self, redis: Redis, keys: Keys, events: Events) -> None:
        self._redis = redis
        self._keys = keys
        self._events = events

    async def get(self, terminal_id: str) -> Terminal | None:
        raw = await self._redis.hgetall(self._keys.terminal(terminal_id))
        return parse(raw) if raw else None

    async def get_scoped(self, scope: Scope, terminal_id: str) -> Terminal | None:
        terminal = await self.get(terminal_id)
        if terminal is None or (terminal.org, terminal.env) != (scope.org, scope.env):
            return None
        return terminal

    async def in_scope(self, scope: Scope) -> list[Terminal]:
        ids = await self._redis.zrange(self._keys.terminals(scope.org, scope.env), 0, -1)
        async with self._redis.pipeline(transaction=False) as pipe:
            for terminal_id in ids:
                pipe.hgetall(self._keys.terminal(text(terminal_id)))
            found = await pipe.execute()
        return [parse(raw) for raw in found if raw]

    async def register(
        self, scope: Scope, name: str, simulated: bool = False
    ) -> tuple[Terminal, str]:
        """A new (offline) terminal and its device secret, which is returned only here."""
        now = int(time.time() * 1000)
        terminal = Terminal(
            new_id("trm"), scope.org, scope.env, name, simulated, "offline", "", "", now, now
        )
        secret = new_secret(SECRET_PREFIX, 32)
        async with self._redis.pipeline(transaction=True) as pipe:
            self._stage_record(pipe, terminal, secret)
            await pipe.execute()
        return terminal, secret

    def _stage_record(self, pipe: Pipeline, terminal: Terminal, secret: str) -> None:
        digest = _digest(secret)
        pipe.hset(
            self._keys.terminal(terminal.id),
            mapping={
                "id": terminal.id,
                "org": terminal.org,
                "env": terminal.env,
                "name": terminal.name,
                "simulated": "1" if terminal.simulated else "0",
                "status": terminal.status,
                "conn": "",
                "current": "",
                "created_ms": terminal.created_ms,
                "status_ms": terminal.status_ms,
                "secret": digest,
            },
        )
        pipe.set(self._keys.terminal_secret(digest), terminal.id)
        pipe.zadd(
            self._keys.terminals(terminal.org, terminal.env), {terminal.id: terminal.created_ms}
        )

    async def ensure_simulated(self, org: str) -> tuple[str, bool]:
        """The id of ``org``'s test-environment simulation terminal; True when just created."""
        candidate = new_id("trm")
        created = await self._redis.set(self._keys.simulated_terminal(org), candidate, nx=True)
        if not created:
            found = await self._redis.get(self._keys.simulated_terminal(org))
            assert found is not None
            return text(found), False
        now = int(time.time() * 1000)
        terminal = Terminal(
            candidate, org, "test", SIMULATOR_NAME, True, "offline", "", "", now, now
        )
        async with self._redis.pipeline(transaction=True) as pipe:
            self._stage_record(pipe, terminal, new_secret(SECRET_PREFIX, 32))
            pipe.sadd(self._keys.simulated_terminals, terminal.id)
            pipe.publish(self._keys.signals, signals.Signal(signals.SIMULATORS, {}).dumps())
            await pipe.execute()
        return terminal.id, True

    async def simulated_ids(self) -> list[str]:
        members = await self._redis.smembers(self._keys.simulated_terminals)
        return sorted(text(m) for m in members)

    async def authenticate(self, secret: str) -> Terminal | None:
        """The terminal whose device secret is ``secret``."""
        if not secret.startswith(SECRET_PREFIX):
            return None
        found = await self._redis.get(self._keys.terminal_secret(_digest(secret)))
        return None if found is None else await self.get(text(found))

    async def rotate_secret(self, terminal_id: str) -> str:
        """A new device secret for the terminal; the old one stops working."""
        secret = new_secret(SECRET_PREFIX, 32)
        digest = _digest(secret)
        key = self._keys.terminal(terminal_id)
        old = await self._redis.hget(key, "secret")
        async with self._redis.pipeline(transaction=True) as pipe:
            if old is not None:
                pipe.delete(self._keys.terminal_secret(text(old)))
            pipe.hset(key, "secret", digest)
            pipe.set(self._keys.terminal_secret(digest), terminal_id)
            await pipe.execute()
        return secret

    async def connect(self, terminal_id: str, conn: str) -> Event | None:
        """The device connection ``conn`` now holds the terminal; staged ``terminal.online``."""
        return await self._presence(terminal_id, conn, "online")

    async def disconnect(self, terminal_id: str, conn: str) -> Event | None:
        """``conn`` closed: offline, unless a newer connection already holds the terminal."""
        return await self._presence(terminal_id, conn, "offline")

    async def _presence(self, terminal_id: str, conn: str, status: str) -> Event | None:
        key = self._keys.terminal(terminal_id)

        async def body(pipe: Pipeline) -> Event | None:
            raw = await pipe.hgetall(key)
            if not raw:
                return None
            terminal = parse(raw)
            if status == "offline" and terminal.conn != conn:
                return None  # a newer connection took over; it owns the presence now
            now = int(time.time() * 1000)
            changes: dict[FieldT, EncodableT] = {"conn": conn if status == "online" else ""}
            event = None
            pipe.multi()  # type: ignore[no-untyped-call]
            if terminal.status != status:
                changes.update(status=status, status_ms=now)
                moved = parse({**raw, b"status": status.encode(), b"status_ms": str(now).encode()})
                event = new_event(f"terminal.{status}", terminal.env, moved.event_data())
                self._events.stage(pipe, event, terminal.org)
            pipe.hset(key, mapping=changes)
            if status == "online":
                pipe.sadd(self._keys.online_terminals, terminal_id)
            else:
                pipe.srem(self._keys.online_terminals, terminal_id)
            signal = signals.Signal(signals.presence_topic(terminal_id), {"status": status})
            pipe.publish(self._keys.signals, signal.dumps())
            return event

        return await transact(self._redis, [key], body)

    async def keep_alive(self, terminal_id: str, conn: str, ttl_s: float) -> None:
        """The holder of ``conn`` is alive; without renewal the terminal goes offline."""
        await self._redis.set(self._keys.terminal_alive(terminal_id), conn, px=int(ttl_s * 1000))

    async def orphaned(self) -> list[Terminal]:
        """Online terminals whose connection's holder stopped renewing (its process died)."""
        ids = sorted(text(m) for m in await self._redis.smembers(self._keys.online_terminals))
        if not ids:
            return []
        alive = await self._redis.mget([self._keys.terminal_alive(i) for i in ids])
        orphans = []
        for terminal_id, holder in zip(ids, alive, strict=True):
            terminal = await self.get(terminal_id)
            if terminal is None or not terminal.online:
                await self._redis.srem(self._keys.online_terminals, terminal_id)
            elif holder is None or text(holder) != terminal.conn:
                orphans.append(terminal)
        return orphans

    async def take_lease(self, terminal_id: str, owner: str, ttl_s: float) -> bool:
        """Take or renew the lease to run this simulation terminal; False when another has it."""
        result = await self._redis.eval(
            _RENEW, 1, self._keys.simulator_lease(terminal_id), owner, int(ttl_s * 1000)
        )
        return bool(result)

    async def release_lease(self, terminal_id: str, owner: str) -> None:
        key = self._keys.simulator_lease(terminal_id)
        found = await self._redis.get(key)
        if found is not None and text(found) == owner:
            await self._redis.delete(key)
