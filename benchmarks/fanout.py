"""Wide fan-out (a section of ``make bench``): one organisation's 100 endpoints against 10, end
to end through one dispatcher, and 10,000 endpoints of 1,000 organisations with the
dispatcher's endpoint cache cold.

Both rows of the first part drain a backlog of events from the events queue, as the
``svc1-e2e`` row does, except that every event goes to every endpoint of one organisation
(10 or 100 of them, spread evenly over the receiver's 10 ports). Both rows make the same
number of deliveries; they run in rounds that alternate which goes first, an even number of
them, and each row is reported by its median run. The ratio is the median over rounds of
each round's wide ÷ narrow: every run adds its deliveries to the same database, and the
runs slowed down as it grew, whichever row ran later. A delivery counts when the receiver
logged a signed 2xx for its (event id, URL).

The cold start stores 10 endpoints for each of 1,000 organisations, starts a dispatcher and
waits until it is ready (it has consumed nothing, so its endpoint cache is empty), then
publishes one event per organisation at once. Its clock starts when that publish starts.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from typing import Any

from benchmarks import repeats
from benchmarks.fanout_drain import Drain, Endpoints, cold_start, drain
from benchmarks.sections import Goal, Run
from benchmarks.service import ServiceSystem
from harness.nginx import Receiver

log = logging.getLogger(__name__)

KEY = "fanout"


@dataclass(frozen=True, slots=True)
class Sizes:
    wide: int = 100
    """Endpoints of the wide row's organisation."""
    narrow: int = 10
    """Endpoints of the row it is compared with."""
    ports: int = 10
    """Receiver ports the endpoints are spread over."""
    deliveries: int = 50_000
    """Deliveries of each row in each round (events: this over its endpoints)."""
    rounds: int = 4
    orgs: int = 1_000
    """Organisations of the cold start, each with ``per_org`` endpoints and one event."""
    per_org: int = 10


FULL = Sizes()
SMOKE = Sizes(wide=10, narrow=2, ports=2, deliveries=400, rounds=1, orgs=50, per_org=10)


async def run(run: Run) -> dict[str, Any]:
    sizes = SMOKE if run.smoke else FULL
    receiver = Receiver(run.workdir, buffered=not run.smoke, ports=sizes.ports, name="fanout")
    env = {"SVC_DELIVERY_TIMEOUT": "1s" if run.smoke else "10s"}
    system = ServiceSystem(run.procs, run.stores, 1, "fanout", env, scheduler=False)
    started = time.monotonic()
    async with receiver:
        try:
            await system.open()
            result = await _measure(Drain(run.bench, receiver, system, run.profile_dir), sizes)
        finally:
            await system.close()
    result["sizes"] = asdict(sizes)
    result["receiver"] = f"{receiver.version()}, {sizes.ports} ports"
    log.info("fanout measured in %.1f s", time.monotonic() - started)
    return result


async def _measure(measure: Drain, sizes: Sizes) -> dict[str, Any]:
    rows: dict[int, list[dict[str, Any]]] = {sizes.narrow: [], sizes.wide: []}
    scopes = {
        width: await Endpoints.make(measure, f"w{width}", 1, width, sizes.ports)
        for width in (sizes.narrow, sizes.wide)
    }
    for number in range(sizes.rounds):
        # Alternating which row goes first, so a machine that drifts over the section
        # charges both rows alike.
        order = (sizes.narrow, sizes.wide) if number % 2 == 0 else (sizes.wide, sizes.narrow)
        for width in order:
            events = sizes.deliveries // width
            row = await drain(measure, scopes[width], events, f"fan{width}r{number}")
            rows[width].append(row)
            log.info("fanout %d endpoints, round %d: %s deliveries/s", width, number, row["rate"])
    cold = await Endpoints.make(measure, "cold", sizes.orgs, sizes.per_org, sizes.ports)
    return {
        "rows": [_median_row(width, runs) for width, runs in rows.items()],
        "ratio": _ratio(rows[sizes.wide], rows[sizes.narrow]),
        "cold": await cold_start(measure, cold, "coldr"),
    }


def _median_row(endpoints: int, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median rate, with every run's rate beside it."""
    ordered = sorted(runs, key=lambda r: r["rate"])
    return {**ordered[(len(ordered) - 1) // 2], "endpoints": endpoints, "rates": _rates(runs)}


def _rates(runs: list[dict[str, Any]]) -> list[float]:
    return [r["rate"] for r in runs]


def ratio_of(wide: list[float], narrow: list[float]) -> float:
    """The median over rounds of the wide row's rate over the narrow row's rate of the same
    round (both lists in round order)."""
    found = repeats.median_ratio(wide, narrow)
    return float("nan") if found is None else found


def _ratio(wide: list[dict[str, Any]], narrow: list[dict[str, Any]]) -> float:
    return ratio_of(_rates(wide), _rates(narrow))


def targets(result: dict[str, Any] | None) -> list[Goal]:
    ratio = first = None
    wide, narrow, endpoints = FULL.wide, FULL.narrow, FULL.orgs * FULL.per_org
    if result:
        ratio, first = result["ratio"], result["cold"]["first_s"]
        narrow, wide = sorted(row["endpoints"] for row in result["rows"])
        endpoints = result["cold"]["endpoints"]
    return [
        Goal(
            f"100 endpoints point: {wide} endpoints ÷ {narrow} endpoints, deliveries/s, "
            "1 dispatcher end to end",
            ratio,
            "≥ 0.9",
            lambda value: value >= 0.9,
        ),
        Goal(
            f"100 endpoints point: {endpoints:,} endpoints, cache cold, first delivery after "
            "the publish, s",
            first,
            "≤ 2",
            lambda value: value <= 2,
        ),
    ]


def _width(row: dict[str, Any]) -> int:
    width: int = row["endpoints"]
    return width


def _narrow(result: dict[str, Any]) -> dict[str, Any]:
    return min(result["rows"], key=_width)


def _wide(result: dict[str, Any]) -> dict[str, Any]:
    return max(result["rows"], key=_width)


def markdown(result: dict[str, Any] | None) -> list[str]:
    if not result:
        return []
    lines = [
        "**Wide fan-out** (one organisation's endpoints on "
        f"{result['sizes']['ports']} receiver ports, one dispatcher, a backlog of events "
        "drained end to end; median run of rounds alternating which row goes first; CPU "
        "of the dispatcher per delivery; the ratio is the median of the rounds' wide ÷ "
        "narrow: "
        + " · ".join(
            f"{w / n:.2f}"
            for w, n in zip(_wide(result)["rates"], _narrow(result)["rates"], strict=True)
            if n
        )
        + ")",
        "",
        "| endpoints | events | deliveries | deliveries/s | ratio | CPU µs per delivery |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for row in sorted(result["rows"], key=_width):
        ratio = 1.0 if row is _narrow(result) else result["ratio"]
        lines.append(
            f"| {row['endpoints']} | {row['events']:,} | {row['delivered']:,} | "
            f"{row['rate']:,.0f} | {ratio:.2f} | {row['cpu_us_per_delivery_dispatcher']} |"
        )
    cold = result["cold"]
    lines += [
        "",
        "**Cold endpoint cache** (a dispatcher just started and ready; one event per "
        "organisation published at once; times from the start of that publish)",
        "",
        "| organisations | endpoints | deliveries | first delivery, s | all done, s |",
        "|---:|---:|---:|---:|---:|",
        f"| {cold['organisations']:,} | {cold['endpoints']:,} | {cold['delivered']:,} | "
        f"{cold['first_s']:.3f} | {cold['all_done_s']:.3f} |",
        "",
    ]
    return lines
