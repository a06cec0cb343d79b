"""``python -m chaos.soak`` (``make soak``): the fault suite's steady load for a long time with
nothing broken, sampled every minute for what a leak would make grow. After the warm-up no
series may grow by more than ``GROWTH`` of its value then (or by its slack, for counts near
zero), and as in every scenario no event may be lost and no payment doubled."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import logging
import math
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from redis.asyncio import Redis

from chaos import report
from chaos.faults import Fault, World
from chaos.suite import DATABASE, FULL, Run, command, play, shops_of, world_of
from chaos.verdict import Verdict
from harness.processes import ROLES
from harness.results import update_readme, write_json

log = logging.getLogger("chaos.soak")

HERE = Path(__file__).resolve().parent
BEGIN = "<!-- soak:begin -->"
END = "<!-- soak:end -->"
GROWTH = 0.10
"""The share of its value at the end of the warm-up a series may grow by."""
CONNECTIONS = f"SELECT count(*) FROM pg_stat_activity WHERE datname = '{DATABASE}'"


@dataclass(frozen=True, slots=True)
class Series:
    """One sampled quantity; ``slack`` is the absolute growth always allowed."""

    name: str
    unit: str
    slack: float


def series(rate: float) -> list[Series]:
    """Every sampled series, in the order of the table."""
    return [
        *(Series(f"{role} RSS", "MB", 0.0) for role in ROLES),
        *(Series(f"{role} open files", "", 8.0) for role in ROLES),
        Series("PostgreSQL connections", "", 2.0),
        Series("Redis memory", "MB", 4.0),
        Series("queued messages", "", 5 * rate),
    ]


@dataclass(frozen=True, slots=True)
class Sample:
    at_s: float
    """Seconds since the soak's load started."""
    values: dict[str, float]


@dataclass(frozen=True, slots=True)
class Growth:
    series: str
    unit: str
    start: float
    """The median of the first three samples after the warm-up; ``end``, of the last three."""
    end: float
    allowed: float
    """``GROWTH`` of ``start``, or the series' slack if more."""

    @property
    def grew(self) -> float:
        return self.end - self.start

    @property
    def passed(self) -> bool:
        return self.grew <= self.allowed  # a series never sampled (nan) fails


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def growths(samples: list[Sample], warm_s: float, rate: float) -> list[Growth]:
    """Each series from the start of the samples after the warm-up to their end, each end the
    median of three samples: a burst in one sample is not a leak, while a leak lifts all three."""
    after = [s for s in samples if s.at_s >= warm_s]
    if len(after) < 2:
        raise ValueError(f"{len(after)} samples after the warm-up: nothing to compare")
    ends = min(3, len(after) // 2)
    found = []
    for s in series(rate):
        start = _median([x.values[s.name] for x in after[:ends] if s.name in x.values])
        end = _median([x.values[s.name] for x in after[-ends:] if s.name in x.values])
        found.append(Growth(s.name, s.unit, start, end, max(GROWTH * start, s.slack)))
    return found


async def sample(world: World, started: float) -> Sample:
    values: dict[str, float] = {}
    for role in ROLES:
        process = world.pods[role].process
        with contextlib.suppress(psutil.NoSuchProcess):  # restarting: that sample has a gap
            if process is not None and process.returncode is None:
                found = psutil.Process(process.pid)
                values[f"{role} RSS"] = found.memory_info().rss / 2**20
                values[f"{role} open files"] = float(found.num_fds())
    connections = await asyncio.to_thread(world.postgres.sql, CONNECTIONS)
    values["PostgreSQL connections"] = float(connections)
    async with Redis.from_url(world.redis.url) as redis:
        values["Redis memory"] = (await redis.info("memory"))["used_memory"] / 2**20
    listed = await world.rabbitmq.ctl("list_queues", "--quiet", "--no-table-headers", "messages")
    values["queued messages"] = float(sum(int(word) for word in listed.split() if word.isdigit()))
    return Sample(round(time.monotonic() - started, 1), values)


@dataclass
class Soak:
    minutes: float
    every_s: float
    warm_s: float
    rate: float
    samples: list[Sample] = field(default_factory=list)

    def fault(self) -> Fault:
        """The soak as a scenario's "fault": sampling, with nothing broken, for its length."""

        async def watch(world: World) -> None:
            started = time.monotonic() - FULL.lead  # the load began a scenario's lead earlier
            until = started + self.minutes * 60
            while True:
                self.samples.append(await sample(world, started))
                log.info("soak: %s", self.samples[-1].values)
                if time.monotonic() + self.every_s > until:
                    break
                await asyncio.sleep(self.every_s)
            await asyncio.sleep(max(0.0, until - time.monotonic()))

        title = f"nothing broken, {self.minutes:g} min of load sampled every {self.every_s:g} s"
        return Fault("soak", title, 0, watch)


def _number(value: float, unit: str) -> str:
    return f"{value:,.1f} {unit}".strip() if unit else f"{value:,.0f}"


def section(run: dict[str, Any], soak: Soak, verdict: Verdict, found: list[Growth]) -> str:
    date = run["date"]
    outcome = (
        "Nothing grew past its allowance; no event lost, no payment doubled.\n"
        if verdict.passed and all(g.passed for g in found)
        else "**Failed: see the table and the results file.**\n"
    )
    rows = "".join(
        f"| {g.series} | {_number(g.start, g.unit)} | {_number(g.end, g.unit)} | "
        f"{_number(g.grew, g.unit)} | {_number(g.allowed, g.unit)} | "
        f"{'yes' if g.passed else '**no**'} |\n"
        for g in found
    )
    return (
        f"Run of {date} ({run['machine']['cores']} cores): {soak.rate:g} payments/s for "
        f"{soak.minutes:g} minutes, sampled every {soak.every_s:g} s, warm-up "
        f"{soak.warm_s / 60:g} min. Raw numbers: [`results/soak-{date}.json`]"
        f"(results/soak-{date}.json).\n\n"
        + report.table([verdict])
        + "\n| series | after the warm-up | at the end | grew | allowed | held |\n"
        "|---|---|---|---|---|---|\n" + rows + "\n" + outcome
    )


async def _run(args: argparse.Namespace) -> int:
    soak = Soak(args.minutes, args.every, min(5.0, args.minutes / 3) * 60, FULL.rate)
    run = Run(dataclasses.replace(FULL, settle=60), faults=[])
    async with asyncio.timeout(args.minutes * 60 + 600), world_of(run) as world:
        _, shop = await shops_of(run, world, ["warmup", "soak"])
        verdict = await play(run, world, soak.fault(), shop)
    run.verdicts.append(verdict)
    found = growths(soak.samples, soak.warm_s, soak.rate)
    summary = run.summary()
    body = {
        **summary,
        "soak": {"minutes": soak.minutes, "every_s": soak.every_s, "warm_s": soak.warm_s},
        "samples": [dataclasses.asdict(s) for s in soak.samples],
        "growth": [{**dataclasses.asdict(g), "passed": g.passed} for g in found],
    }
    write_json(args.results / f"soak-{summary['date']}.json", body)
    text = section(summary, soak, verdict, found)
    if args.readme is not None:
        update_readme(args.readme, text, BEGIN, END)
    print(text)
    return 0 if verdict.passed and all(g.passed for g in found) else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m chaos.soak", description=__doc__)
    parser.add_argument("--minutes", type=float, default=30.0, help="length of the load")
    parser.add_argument("--every", type=float, default=60.0, help="seconds between samples")
    parser.add_argument("--results", type=Path, default=HERE / "results")
    parser.add_argument("--readme", type=Path, help="Markdown file with the soak markers")
    sys.exit(command(parser, _run))
