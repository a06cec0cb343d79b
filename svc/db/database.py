"""One asyncpg pool per process; a ``Unit`` is one transaction with effects run after commit.

Repositories take a ``Queries`` (the pool itself for single reads, or a ``Unit``) so that a
use case decides where its transaction begins and ends. A lost or refused connection
surfaces as ``svc.errors.Unavailable`` wherever it happens; the pool reconnects by itself
once PostgreSQL is back.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Protocol

import asyncpg
from asyncpg.transaction import Transaction
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_delay, wait_exponential

from svc.errors import Unavailable

log = logging.getLogger(__name__)

DOWN: tuple[type[BaseException], ...] = (
    OSError,
    TimeoutError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,  # a connection broken in the middle of an operation
    asyncpg.exceptions.OperatorInterventionError,
    asyncpg.exceptions.InsufficientResourcesError,
)
"""Errors that mean "PostgreSQL cannot serve us now", not "this query is wrong"."""

ACQUIRE_TIMEOUT = 5.0
"""Seconds a unit of work waits for a free connection (``SVC_DATABASE_ACQUIRE_TIMEOUT``)."""
STATEMENT_TIMEOUT = 30.0
"""Seconds PostgreSQL lets one statement run (``SVC_DATABASE_STATEMENT_TIMEOUT``; 0: none)."""
COMMAND_MARGIN = 5.0
"""The client gives up on a statement this much later than the server should have: only a
connection that stopped answering gets there."""

Effect = Callable[[], Awaitable[None]]


class Queries(Protocol):
    """What repositories run queries on: the pool (autocommit) or a unit of work."""

    async def fetch(self, query: str, *args: Any) -> list[Any]: ...

    async def fetchrow(self, query: str, *args: Any) -> Any: ...

    async def fetchval(self, query: str, *args: Any) -> Any: ...

    async def execute(self, query: str, *args: Any) -> str: ...


class Unit:
    """One transaction on one connection; ``after_commit`` effects run only if it commits.

    ``write`` stages a statement whose result nobody reads (an ``INSERT``, ``UPDATE`` or
    ``DELETE`` without ``RETURNING``): staged writes go to PostgreSQL together, as one
    statement (each a data-modifying ``WITH`` of the last), before the unit's next query or
    its commit, so a state change of several rows costs one round trip. Their errors (a
    unique violation, say) raise there, and roll the unit back like any other.

    A unit from ``Database.transaction`` begins its transaction with its first query. One
    that only staged writes never begins one: its writes go as one statement, which commits
    by itself, so creating a payment with its event, outbox row and idempotency record costs
    a single round trip and no ``BEGIN`` or ``COMMIT``.
    """

    __slots__ = ("conn", "effects", "_staged", "_pending")

    def __init__(self, conn: asyncpg.Connection, pending: Transaction | None = None) -> None:
        self.conn = conn
        self.effects: list[Effect] = []
        self._staged: list[tuple[str, tuple[Any, ...]]] = []
        self._pending = pending  # the transaction its first query begins

    def after_commit(self, effect: Effect) -> None:
        """Run ``effect`` once the transaction has committed (publishes, wake-up signals)."""
        self.effects.append(effect)

    def write(self, query: str, *args: Any) -> None:
        """Stage a statement without a result, to run with the unit's next query or commit."""
        self._staged.append((query, args))

    @property
    def begun(self) -> bool:
        """Whether the unit's transaction is open (its first query has run)."""
        return self._pending is None

    async def flush(self) -> None:
        """Run the staged writes now, in one statement (``MAX_COMBINED`` at most each)."""
        staged, self._staged = self._staged, []
        if len(staged) > MAX_COMBINED:
            await self._begin()
        for start in range(0, len(staged), MAX_COMBINED):
            query, args = combined(staged[start : start + MAX_COMBINED])
            await self.conn.execute(query, *args)

    async def _begin(self) -> None:
        if self._pending is not None:
            transaction, self._pending = self._pending, None
            await transaction.start()

    async def _ready(self) -> None:
        """Begin the transaction, then send what is staged: a query sees the unit's writes."""
        await self._begin()
        await self.flush()

    async def fetch(self, query: str, *args: Any) -> list[Any]:
        await self._ready()
        return list(await self.conn.fetch(query, *args))

    async def fetchrow(self, query: str, *args: Any) -> Any:
        await self._ready()
        return await self.conn.fetchrow(query, *args)

    async def fetchval(self, query: str, *args: Any) -> Any:
        await self._ready()
        return await self.conn.fetchval(query, *args)

    async def execute(self, query: str, *args: Any) -> str:
        await self._ready()
        return str(await self.conn.execute(query, *args))

    async def copy(
        self, table: str, columns: Sequence[str], records: list[tuple[Any, ...]]
    ) -> None:
        await self._ready()
        await self.conn.copy_records_to_table(table, records=records, columns=list(columns))


MAX_COMBINED = 8
"""Staged writes per statement: a state change's rows, not a bulk load's (whose combined
statements would each be planned anew)."""
_PARAMETER = re.compile(r"\$([0-9]+)")


def combined(statements: Sequence[tuple[str, Sequence[Any]]]) -> tuple[str, list[Any]]:
    """One statement running every one of ``statements`` (writes without results), and its
    arguments: each but the last a ``WITH`` of the last, its parameters renumbered after
    those before it. PostgreSQL runs every data-modifying ``WITH`` to completion, once."""
    if len(statements) == 1:
        query, args = statements[0]
        return query, list(args)
    values = [value for _, args in statements for value in args]
    shape = tuple((query, len(args)) for query, args in statements)
    return _combined_text(shape), values


@functools.lru_cache(maxsize=256)
def _combined_text(shape: tuple[tuple[str, int], ...]) -> str:
    """The text of ``combined`` for statements and their numbers of arguments: the same few
    state changes recur, so each is renumbered once."""
    parts: list[str] = []
    offset = 0
    for query, count in shape:
        parts.append(_renumbered(query, offset))
        offset += count
    withs = ", ".join(f"w{i} AS ({part})" for i, part in enumerate(parts[:-1]))
    return f"WITH {withs} {parts[-1]}"


def _renumbered(query: str, offset: int) -> str:
    return _PARAMETER.sub(lambda m: f"${int(m.group(1)) + offset}", query)


class Database:
    """The pool of one process."""

    def __init__(self, pool: asyncpg.Pool, acquire_timeout: float = ACQUIRE_TIMEOUT) -> None:
        self.pool = pool
        self.acquire_timeout = acquire_timeout

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Unit]:
        """A unit of work: commits when the block ends, rolls back when it raises (see
        ``Unit`` for when it is one statement without a transaction).

        Effects are the caller's to run after the block (see ``Context.unit``).
        """
        try:
            async with self.pool.acquire(timeout=self.acquire_timeout) as conn:
                transaction = conn.transaction()
                unit = Unit(conn, transaction)
                try:
                    yield unit
                    await unit.flush()  # alone, one statement that commits by itself
                except BaseException:
                    if unit.begun:
                        await transaction.rollback()
                    raise
                if unit.begun:
                    await transaction.commit()
        except DOWN as exc:
            raise Unavailable("postgresql", str(exc) or type(exc).__name__) from exc

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Unit]:
        """A connection without a transaction (each statement commits by itself)."""
        try:
            async with self.pool.acquire(timeout=self.acquire_timeout) as conn:
                unit = Unit(conn)
                yield unit
                await unit.flush()
        except DOWN as exc:
            raise Unavailable("postgresql", str(exc) or type(exc).__name__) from exc

    async def fetch(self, query: str, *args: Any) -> list[Any]:
        async with self.connection() as unit:
            return await unit.fetch(query, *args)

    async def fetchrow(self, query: str, *args: Any) -> Any:
        async with self.connection() as unit:
            return await unit.fetchrow(query, *args)

    async def fetchval(self, query: str, *args: Any) -> Any:
        async with self.connection() as unit:
            return await unit.fetchval(query, *args)

    async def execute(self, query: str, *args: Any) -> str:
        async with self.connection() as unit:
            return await unit.execute(query, *args)

    async def ping(self) -> bool:
        try:
            return bool(await self.fetchval("SELECT true"))
        except Exception:  # any failure means not reachable
            return False

    async def close(self) -> None:
        await self.pool.close()


async def create_pool(
    url: str, size: int, wait: float = 60.0, statement_timeout: float = STATEMENT_TIMEOUT
) -> asyncpg.Pool:
    """A pool, retried with back-off for up to ``wait`` seconds at start-up.

    PostgreSQL cancels a statement running longer than ``statement_timeout`` seconds (0: no
    limit), which raises ``Unavailable`` like an outage: the request is answered 503 and the
    handler's message goes back to its queue. ``url`` may name several hosts
    (``postgresql://u:p@host1:5432,host2:5432/db?target_session_attrs=read-write``): asyncpg
    connects to the first that accepts and is writable.
    """
    settings = {"jit": "off", "application_name": "svc"}
    command_timeout = None
    if statement_timeout > 0:
        settings["statement_timeout"] = str(round(statement_timeout * 1000))
        command_timeout = statement_timeout + COMMAND_MARGIN
    async for attempt in AsyncRetrying(
        stop=stop_after_delay(wait),
        wait=wait_exponential(multiplier=0.2, max=5),
        retry=retry_if_exception_type(DOWN),
        reraise=True,
    ):
        with attempt:
            return await asyncpg.create_pool(
                url,
                min_size=1,
                max_size=size,
                command_timeout=command_timeout,
                # Every statement here is short; planning them with JIT only costs time.
                server_settings=settings,
                reset=_keep_session,
            )
    raise AssertionError("unreachable")


async def _keep_session(_conn: asyncpg.Connection) -> None:
    """Nothing to reset when a connection goes back to the pool.

    The pool still rolls back a transaction left open; the rest of asyncpg's default reset
    (unlock session advisory locks, close cursors, unlisten, reset settings) undoes state this
    service never leaves on a pooled connection (its advisory locks are transaction-level,
    it listens through Redis, never sets a session setting), and would cost a round trip on
    every release: one per request, one per batch of delivery attempts.
    """


@asynccontextmanager
async def open_database(
    url: str,
    size: int,
    wait: float = 60.0,
    statement_timeout: float = STATEMENT_TIMEOUT,
    acquire_timeout: float = ACQUIRE_TIMEOUT,
) -> AsyncIterator[Database]:
    pool = await create_pool(url, size, wait, statement_timeout)
    try:
        yield Database(pool, acquire_timeout)
    finally:
        await pool.close()


def lock_id(*parts: bytes) -> int:
    """The 64-bit key of a transaction-level advisory lock on what ``parts`` name (the first
    says whose lock it is): 8 bytes of a digest, so callers' keys do not meet."""
    return int.from_bytes(hashlib.sha256(b"\0".join(parts)).digest()[:8], "big", signed=True)
