"""The workload every system gets (~1 KB payment events) and the interface of a system."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import secrets
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from typing import Any, Protocol, Self, TypeVar

import orjson

from svc.envelope import Event, iso_ms, new_event

BODY_BYTES = 1047
EVENT_TYPE = "payment.succeeded"
IN_FLIGHT = 1000  # publishes in flight at once when publishing as fast as possible
T = TypeVar("T")


def _data(seq: int, padding: int) -> dict[str, object]:
    data = {"id": f"pay_{seq:012d}", "status": "succeeded", "amount": 2450, "currency": "CHF"}
    return {**data, "description": "x" * padding}


@functools.cache
def _padding() -> int:
    # Ids, sequence numbers and timestamps have fixed widths, so one probe sizes every body.
    return max(0, BODY_BYTES - len(new_event(EVENT_TYPE, "test", _data(0, 0)).body))


def payment_event(seq: int, age: float = 0) -> Event:
    """A ``payment.succeeded`` event ``BODY_BYTES`` long, created ``age`` seconds ago."""
    event = new_event(EVENT_TYPE, "test", _data(seq, _padding()))
    if not age:
        return event
    created_ms = event.created_ms - round(age * 1000)
    body = orjson.loads(event.body) | {"created_at": iso_ms(created_ms)}
    return dataclasses.replace(event, created_ms=created_ms, body=orjson.dumps(body))


@dataclasses.dataclass(frozen=True, slots=True)
class Target:
    """An endpoint of a run: its URL and, for the baselines, the secret they sign with."""

    url: str
    secret: str = dataclasses.field(default_factory=lambda: "whsec_" + secrets.token_urlsafe(32))


async def paced(count: int, rate: float, send: Callable[[int], Coroutine[Any, Any, None]]) -> None:
    """Call ``send(i)`` for ``i < count`` at ``rate`` per second (0: ``IN_FLIGHT`` at once)."""
    loop = asyncio.get_running_loop()
    gate = asyncio.Semaphore(IN_FLIGHT if rate <= 0 else count or 1)

    async def one(seq: int) -> None:
        try:
            await send(seq)
        finally:
            gate.release()

    started = loop.time()
    async with asyncio.TaskGroup() as group:
        for seq in range(count):
            await gate.acquire()
            if rate > 0 and (delay := started + seq / rate - loop.time()) > 0:
                await asyncio.sleep(delay)
            group.create_task(one(seq))


def run_fast(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` on uvloop, as the service runs, when the ``fast`` extra is installed."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coroutine)
    return uvloop.run(coroutine)


class System(Protocol):
    """A delivery pipeline under test. ``publish`` sends events round-robin over ``targets`` at
    ``rate`` per second (0: a backlog) and returns each id's creation time in unix ms; ``spawn``
    starts the workers without waiting for them (so CPU accounting begins first)."""

    name: str
    label: str
    input: str = "delivery jobs"  # what a backlog is made of: jobs, or events to fan out

    async def publish(
        self, targets: Sequence[Target], count: int, rate: float
    ) -> dict[str, int]: ...

    async def spawn(self) -> None: ...

    async def stop(self) -> None: ...

    def cpu_groups(self) -> dict[str, list[int]]: ...

    async def open(self) -> None:
        return None

    async def ready(self) -> None:
        return None

    async def start(self) -> None:
        await self.spawn()
        await self.ready()

    async def close(self) -> None: ...

    @contextlib.asynccontextmanager
    async def opened(self) -> AsyncIterator[Self]:
        """The system opened for the block, and closed after it even if opening failed."""
        try:
            await self.open()
            yield self
        finally:
            await self.close()
