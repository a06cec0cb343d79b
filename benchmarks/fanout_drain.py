"""The runs of the wide fan-out section: organisations with many endpoints, a backlog of
events drained through one dispatcher, and a cold start; receipts counted per (event, URL)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.receipts import AccessLog, Receipt, rate_summary
from benchmarks.runs import Bench, profiled, settled_counters
from benchmarks.service import ServiceSystem
from benchmarks.workload import EVENT_TYPE, chunks, paced, payment_event
from harness.nginx import Receiver
from harness.sampling import CpuTrace
from svc.amqp.messages import event_message
from svc.db.times import to_dt
from svc.envelope import Event
from svc.orgs import Scope

log = logging.getLogger(__name__)

UNIT = 500
"""Endpoints created per transaction, ``UNITS`` transactions at once."""
UNITS = 4
POLL = 0.1

Delivered = dict[tuple[str, str], Receipt]
"""The first signed 2xx of each (event id, path): one delivery each."""


def count_deliveries(receipts: Iterable[Receipt], expected: set[str], into: Delivered) -> int:
    """File the first signed 2xx of each (event id, path) of the ``expected`` events into
    ``into``; returns how many further signed 2xx there were for pairs already filed."""
    again = 0
    for receipt in receipts:
        if not receipt.ok or receipt.event_id not in expected:
            continue
        key = (receipt.event_id, receipt.path)
        if key in into:
            again += 1
        else:
            into[key] = receipt
    return again


def port_of(org: int, endpoint: int, per_org: int, ports: int) -> int:
    """Which receiver port endpoint ``endpoint`` of organisation ``org`` is on: all the
    endpoints in turn over the ports, so each port takes an even share."""
    return (org * per_org + endpoint) % ports


@dataclass
class Drain:
    """What the runs share: the suite's bench (for the broker and database processes), the
    section's own receiver with its log, and the service with its dispatcher."""

    bench: Bench
    receiver: Receiver
    system: ServiceSystem
    profile_dir: Path | None
    log: AccessLog = field(init=False)
    _read: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.log = AccessLog(*self.receiver.log_paths)

    def cpu_groups(self) -> dict[str, list[int]]:
        return {
            **self.system.cpu_groups(),
            "broker": self.bench.broker_pids(),
            "postgres": self.bench.postgres_pids(),
            "nginx": self.receiver.pids,
        }

    def poll(self, name: str, expected: set[str], into: Delivered) -> int:
        """Read the receiver's log; file the new receipts of ``name``'s endpoints."""
        self.log.poll()
        receipts = self.log.runs[name]
        start, self._read[name] = self._read.get(name, 0), len(receipts)
        return count_deliveries(receipts[start:], expected, into)

    async def wait(
        self, name: str, expected: set[str], deliveries: int, trace: CpuTrace | None = None
    ) -> tuple[Delivered, int]:
        """Wait until ``deliveries`` of the ``expected`` events arrived, or time ran out."""
        found: Delivered = {}
        again = 0
        deadline = time.monotonic() + max(30.0, deliveries / 500)
        while True:
            if trace is not None:
                trace.sample()
            again += self.poll(name, expected, found)
            if len(found) >= deliveries:
                break
            if time.monotonic() > deadline:
                log.warning("%s: %d of %d deliveries arrived", name, len(found), deliveries)
                break
            await asyncio.sleep(POLL)
        if trace is not None:
            trace.sample()  # brackets the receipts of the last poll
        return found, again


@dataclass(frozen=True, slots=True)
class Endpoints:
    """Organisations of the run's database with ``per_org`` endpoints each, subscribed to the
    workload's event type; their paths start with ``name``."""

    name: str
    orgs: list[str]
    per_org: int

    @property
    def count(self) -> int:
        return len(self.orgs) * self.per_org

    @classmethod
    async def make(
        cls, measure: Drain, name: str, orgs: int, per_org: int, ports: int
    ) -> Endpoints:
        system, receiver = measure.system, measure.receiver
        ids = list(await asyncio.gather(*(system.organisation(f"{name}o{i}") for i in range(orgs))))
        urls = [
            (org, receiver.url(f"/{name}/o{i}e{j}", port_of(i, j, per_org, ports)))
            for i, org in enumerate(ids)
            for j in range(per_org)
        ]
        gate = asyncio.Semaphore(UNITS)

        async def create(part: Sequence[tuple[str, str]]) -> None:
            async with gate, system.ctx.unit() as unit:
                for org, url in part:
                    await system.ctx.endpoints.create(unit, Scope(org, "test"), url, [EVENT_TYPE])

        await asyncio.gather(*(create(urls[s : s + UNIT]) for s in range(0, len(urls), UNIT)))
        return cls(name, ids, per_org)


async def _store(system: ServiceSystem, events: list[tuple[Event, str]]) -> None:
    """Store events (no outbox rows: they are published right after)."""
    async with system.ctx.unit() as unit:
        for part in chunks(range(len(events)), 5_000):
            await unit.copy(
                "events",
                ("id", "org_id", "env", "type", "created_at", "body"),
                [
                    (e.id, org, e.environment, e.type, to_dt(e.created_ms), e.body)
                    for e, org in (events[seq] for seq in part)
                ],
            )


async def _publish(system: ServiceSystem, events: list[tuple[Event, str]]) -> None:
    """Publish stored events on the events exchange, many confirms in flight."""
    exchange = system.ctx.exchange

    async def send(seq: int) -> None:
        event, org = events[seq]
        await exchange.publish(event_message(event, org), routing_key=event.type)

    await paced(len(events), 0, send)


async def drain(measure: Drain, scope: Endpoints, count: int, run: str) -> dict[str, Any]:
    """A backlog of ``count`` events of the scope's one organisation on the events queue,
    then a dispatcher started to drain it: deliveries per second from the first receipt to
    the last, and CPU per delivery over that window."""
    system = measure.system
    made = [(payment_event(seq), scope.orgs[0]) for seq in range(count)]
    await _store(system, made)
    await _publish(system, made)
    expected = {event.id for event, _ in made}
    wanted = count * scope.count
    await system.spawn()
    trace = CpuTrace(measure.cpu_groups())
    trace.sample()
    async with profiled(system, measure.profile_dir, run):
        await system.ready()
        found, again = await measure.wait(scope.name, expected, wanted, trace)
    counters = await settled_counters(system, len(found))
    await system.stop()
    receipts = list(found.values())
    rate = rate_summary(receipts)
    row: dict[str, Any] = {
        "events": count,
        "expected": wanted,
        "delivered": len(found),
        "duplicates": again,
        "rate": rate["rate_per_s"],
        "duration_s": rate["duration_s"],
        "counters": counters,
    }
    if len(receipts) > 1:
        first, last = min(r.at_ms for r in receipts), max(r.at_ms for r in receipts)
        for group, seconds in trace.between(first, last).items():
            row[f"cpu_us_per_delivery_{group}"] = round(seconds * 1e6 / (len(receipts) - 1))
    return row


async def cold_start(measure: Drain, scope: Endpoints, run: str) -> dict[str, Any]:
    """One event for each organisation of ``scope``, published at once to a dispatcher that
    is ready but has loaded no endpoint yet; times from the start of the publish."""
    system = measure.system
    made = [(payment_event(seq), org) for seq, org in enumerate(scope.orgs)]
    await _store(system, made)
    await system.spawn()
    await system.ready()
    expected = {event.id for event, _ in made}
    async with profiled(system, measure.profile_dir, run):
        publish_ms = time.time() * 1000
        await _publish(system, made)
        published_ms = time.time() * 1000
        found, again = await measure.wait(scope.name, expected, scope.count)
    counters = await settled_counters(system, len(found))
    await system.stop()
    times = [r.at_ms for r in found.values()]
    return {
        "clock": "from the start of the publish; the dispatcher was ready, and idle, before it",
        "organisations": len(scope.orgs),
        "endpoints": scope.count,
        "events": len(made),
        "expected": scope.count,
        "delivered": len(found),
        "duplicates": again,
        "publish_s": round((published_ms - publish_ms) / 1000, 3),
        "first_s": round((min(times) - publish_ms) / 1000, 3) if times else None,
        "all_done_s": round((max(times) - publish_ms) / 1000, 3) if times else None,
        "counters": counters,
    }
