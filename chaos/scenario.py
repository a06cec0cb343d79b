"""One scenario: steady load, the fault in the middle, then waiting (bounded) until every
accepted payment's event has reached every endpoint subscribed to it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from chaos.faults import Fault, World
from harness.load import Load, Request
from harness.receivers import Receiver

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Timing:
    """How long each phase lasts, in seconds, and the load's rate."""

    rate: float
    lead: float
    """Load before the fault."""
    after: float
    """Load after the fault ended."""
    min_load: float
    """The load lasts at least this long."""
    flaky_down: float
    """The flaky endpoint answers 503 from the scenario's start for this long."""
    settle: float
    """After the load stops, events may take this long to arrive; later is lost."""
    finish_within: float
    """After the load stops, requests still retrying may take this long."""
    ready_within: float = 60.0


FULL = Timing(rate=50, lead=8, after=20, min_load=35, flaky_down=30, settle=45, finish_within=40)
SMOKE = Timing(rate=50, lead=1.5, after=2.5, min_load=4, flaky_down=2, settle=20, finish_within=15)


@dataclass(frozen=True, slots=True)
class Shop:
    """A scenario's own organisation: its test key and one endpoint on every receiver."""

    name: str
    org: str
    key: str
    endpoints: dict[str, str]
    """Receiver name → endpoint id; every endpoint takes ``payment.created`` at ``path``."""

    @property
    def path(self) -> str:
        return f"/{self.name}"


@dataclass
class Observed:
    """What happened in one scenario, on the harness's monotonic clock."""

    fault: Fault
    shop: Shop
    started: float
    not_ready_before: list[str]
    requests: list[Request] = field(default_factory=list)
    fault_start: float = 0.0
    fault_end: float = 0.0
    stops: list[tuple[float, float]] = field(default_factory=list)
    """Broker nodes the fault took away: when each was told to stop and when it was gone."""
    load_end: float = 0.0
    deadline: float = 0.0
    ended: float = 0.0


def arrived(receivers: list[Receiver], path: str, payments: set[str]) -> bool:
    """Whether every receiver took the event of each of ``payments`` at ``path``."""
    return all(payments <= {x.payment_id for x in r.endpoints[path].receipts} for r in receivers)


async def wait_until(done: Callable[[], bool], deadline: float) -> bool:
    """Poll ``done`` until it holds or the monotonic ``deadline`` passes."""
    while not done():
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.25)
    return True


async def _flaky(receiver: Receiver, path: str, seconds: float) -> None:
    receiver.failing.add(path)
    try:
        await asyncio.sleep(seconds)
    finally:
        receiver.failing.discard(path)


async def _break(world: World, fault: Fault) -> None:
    """Inject ``fault``; heal it after its down time, and also when injecting failed."""
    try:
        await fault.inject(world)
        if fault.heal is not None:
            await asyncio.sleep(fault.down)
    finally:
        if fault.heal is not None:
            await fault.heal(world)


async def run(world: World, fault: Fault, shop: Shop, api_url: str, timing: Timing) -> Observed:
    """Run ``fault`` under load for ``shop``; returns once the load has finished."""
    not_ready = await world.pods.wait_ready(timing.ready_within)
    if not_ready:
        log.warning("%s: not ready before the scenario: %s", fault.name, ", ".join(not_ready))
    seen = Observed(fault, shop, time.monotonic(), not_ready)
    flaky = asyncio.create_task(_flaky(world.receivers.flaky, shop.path, timing.flaky_down))
    load = Load(api_url, shop.key, timing.rate, fault.name)
    stop = asyncio.Event()
    sending = asyncio.create_task(load.run(stop, timing.finish_within))
    try:
        await asyncio.sleep(timing.lead)
        seen.fault_start = time.monotonic()
        log.info("%s: injecting %s", fault.name, fault.title)
        world.stops.clear()
        await _break(world, fault)
        seen.fault_end = time.monotonic()
        seen.stops = list(world.stops)
        log.info("%s: fault over after %.1f s", fault.name, seen.fault_end - seen.fault_start)
        end = max(seen.fault_end + timing.after, seen.started + timing.min_load)
        await asyncio.sleep(end - time.monotonic())
        stop.set()
        seen.load_end = time.monotonic()
        seen.deadline = seen.load_end + timing.settle
        await sending
    finally:
        stop.set()
        if not sending.done():
            sending.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sending
        flaky.cancel()  # over by now unless the scenario failed early
        with contextlib.suppress(asyncio.CancelledError):
            await flaky
        await world.receivers.start()  # up again even if healing failed
    seen.requests = load.requests
    return seen
