"""The workload every system gets: ~1 KB payment events spread over a few endpoints."""

from __future__ import annotations

import abc
import asyncio
import dataclasses
import functools
from collections.abc import Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from svc.envelope import Event, iso_ms, new_event

BODY_BYTES = 1047
EVENT_TYPE = "payment.succeeded"


def _data(seq: int, padding: int) -> dict[str, object]:
    return {
        "id": f"pay_{seq:012d}",
        "status": "succeeded",
        "amount": 2450,
        "currency": "CHF",
        "description": "x" * padding,
    }


@functools.cache
def _padding() -> int:
    # Ids, sequence numbers and timestamps have fixed widths, so one probe sizes every body.
    return max(0, BODY_BYTES - len(new_event(EVENT_TYPE, "test", _data(0, 0)).body))


def payment_event(seq: int) -> Event:
    """A ``payment.succeeded`` event, created now, whose body is ``BODY_BYTES`` long."""
    return new_event(EVENT_TYPE, "test", _data(seq, _padding()))


def aged(event: Event, seconds: float) -> Event:
    """``event`` as if created ``seconds`` earlier: its creation time and its body's
    ``created_at`` alike (the body keeps its length and key order)."""
    created_ms = event.created_ms - round(seconds * 1000)
    envelope = orjson.loads(event.body)
    envelope["created_at"] = iso_ms(created_ms)
    return dataclasses.replace(event, created_ms=created_ms, body=orjson.dumps(envelope))


@dataclass(frozen=True, slots=True)
class Target:
    """An endpoint of a run: its URL and, for the baselines, the secret they sign with."""

    url: str
    secret: str


def chunks(items: Sequence[int], size: int) -> Iterator[Sequence[int]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


IN_FLIGHT = 1000
"""Publishes in flight at once when publishing as fast as possible."""


async def paced(count: int, rate: float, send: Callable[[int], Coroutine[Any, Any, None]]) -> None:
    """Call ``send(i)`` for ``i < count`` at ``rate`` per second (all at once when 0)."""
    loop = asyncio.get_running_loop()
    pending: set[asyncio.Task[None]] = set()
    # As fast as possible: many publishes in flight on one channel, but bounded. A semaphore,
    # not asyncio.wait over the pending set: that costs O(in flight) per send, and end-to-end
    # runs publish while the system under test runs on the same cores.
    gate = asyncio.Semaphore(IN_FLIGHT)

    def done(task: asyncio.Task[None]) -> None:
        pending.discard(task)
        if rate <= 0:
            gate.release()

    started = loop.time()
    for seq in range(count):
        if rate > 0:
            delay = started + seq / rate - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
        else:
            await gate.acquire()
        task = asyncio.create_task(send(seq))
        pending.add(task)
        task.add_done_callback(done)
    if pending:
        await asyncio.gather(*pending)


class System(abc.ABC):
    """A delivery pipeline under test: publish events for targets, start and stop its workers."""

    name: str
    label: str
    input = "delivery jobs"
    """What a backlog is made of: one message per delivery, or events to fan out."""
    uses_database = False
    """True when the system keeps its data in PostgreSQL (its CPU is then charged too)."""

    @abc.abstractmethod
    async def publish(self, targets: Sequence[Target], count: int, rate: float) -> dict[str, int]:
        """Publish ``count`` events round-robin over ``targets`` at ``rate`` per second (0: as
        fast as possible); returns each event id's creation time in unix milliseconds, in the
        order the events were made (event ``i`` went to ``targets[i % len(targets)]``)."""

    async def open(self) -> None:
        """Connect whatever publishing needs (before the first ``publish``)."""
        return None

    @abc.abstractmethod
    async def start(self) -> None:
        """Start the workers."""

    async def spawn(self) -> None:
        """Start the workers' processes without waiting for them to be ready, so that CPU
        accounting can begin before the first of them takes work; ``ready`` waits."""
        await self.start()

    async def ready(self) -> None:
        """Wait until the workers started by ``spawn`` are ready."""
        return None

    @abc.abstractmethod
    async def stop(self) -> None:
        """Stop the workers."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Remove every queue and key this system created."""

    def cpu_groups(self) -> dict[str, list[int]]:
        """Worker process ids by role, for CPU accounting."""
        return {}

    def roles(self) -> dict[str, int]:
        """How many processes of each role run, where the system has roles."""
        return {}

    def peak_rss_mb(self) -> float | None:
        """Peak RSS of one dispatcher process since the last ``reset_rss``, if sampled."""
        return None

    def reset_rss(self) -> None:
        return None

    async def attempts_logged(self, targets: Sequence[Target], successes: int) -> int | None:
        """Successful attempts the system itself recorded for ``targets`` (the service's
        delivery log), waiting briefly for ``successes``; None when it keeps no log."""
        return None

    async def counters(self) -> dict[str, float]:
        """The system's own counters (the service's Prometheus metrics), if it has any."""
        return {}
