"""``python -m chaos.soak`` (``make soak``): the fault suite's steady load for a long time with
nothing broken, sampling every minute what a leak would make grow.

Sampled: each role's resident memory and open file descriptors (from ``/proc``), PostgreSQL's
connections to the service's database, Redis's memory, and the messages in RabbitMQ's queues.
After the warm-up (the first 5 minutes) no series may grow by more than 10 % of its value at
the end of the warm-up, or by a small absolute amount for the counts that sit near zero (a few
files, two connections, five seconds of load in the queues); and, as in every scenario, no
event may be lost and no payment doubled. Everything runs on the suite's private servers. The
table goes to ``chaos/README.md`` between the soak markers, the samples and the verdict to
``chaos/results/soak-<date>.json`` and a chart of the samples to ``soak-<date>.png``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
from redis.asyncio import Redis

from chaos import report
from chaos.faults import Fault, World
from chaos.scenario import FULL
from chaos.suite import Options, Run, command, guarded, play, shops_of, world_of
from chaos.verdict import Verdict
from harness.processes import ROLES

log = logging.getLogger("chaos.soak")

HERE = Path(__file__).resolve().parent
BEGIN = "<!-- soak:begin -->"
END = "<!-- soak:end -->"
GROWTH = 0.10
"""At most this share of its value at the end of the warm-up may a series grow by."""


@dataclass(frozen=True, slots=True)
class Series:
    """One sampled quantity; ``slack`` is the absolute growth always allowed."""

    name: str
    unit: str
    slack: float


def series(rate: float) -> list[Series]:
    """Every sampled series, in the order of the tables and the chart."""
    roles = [Series(f"{role} RSS", "MB", 0.0) for role in ROLES]
    files = [Series(f"{role} open files", "", 8.0) for role in ROLES]
    return [
        *roles,
        *files,
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
    """The median of the first three samples after the warm-up."""
    end: float
    """The median of the last three samples."""
    allowed: float
    """How much it may grow: 10 % of ``start``, or the series' slack if more."""

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
    median of three samples: a burst of connections in one sample is not a leak, while a leak
    lifts all three."""
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


def _proc(pid: int) -> tuple[float, float]:
    """Resident memory (MB) and open file descriptors of process ``pid``."""
    status = Path(f"/proc/{pid}/status").read_text()
    kilobytes = next(int(line.split()[1]) for line in status.splitlines() if line[:6] == "VmRSS:")
    return kilobytes / 1024, float(len(os.listdir(f"/proc/{pid}/fd")))


async def _queued(world: World) -> float:
    """Messages in every queue of the broker (ready and unacknowledged)."""
    listed = await world.rabbitmq.ctl("list_queues", "--quiet", "--no-table-headers", "messages")
    return float(sum(int(word) for word in listed.split() if word.isdigit()))


async def sample(world: World, database_url: str, started: float) -> Sample:
    values: dict[str, float] = {}
    for role in ROLES:
        process = world.pods[role].process
        if process is None or process.returncode is not None:
            continue  # restarting: that sample has a gap
        try:
            rss, files = _proc(process.pid)
        except (FileNotFoundError, ProcessLookupError):
            continue
        values[f"{role} RSS"] = rss
        values[f"{role} open files"] = files
    conn = await asyncpg.connect(database_url)
    try:
        values["PostgreSQL connections"] = float(
            await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        )
    finally:
        await conn.close()
    redis = Redis.from_url(world.redis.url)
    try:
        values["Redis memory"] = (await redis.info("memory"))["used_memory"] / 2**20
    finally:
        await redis.aclose()
    values["queued messages"] = await _queued(world)
    return Sample(round(time.monotonic() - started, 1), values)


@dataclass
class Soak:
    minutes: float
    every_s: float
    warm_s: float
    rate: float
    samples: list[Sample] = field(default_factory=list)

    def fault(self, database_url: str) -> Fault:
        """The soak as a scenario's "fault": sampling, with nothing broken, for its length."""

        async def watch(world: World) -> None:
            started = time.monotonic() - FULL.lead  # the load began a scenario's lead earlier
            until = started + self.minutes * 60
            while True:
                self.samples.append(await sample(world, database_url, started))
                log.info("soak: %s", _line(self.samples[-1]))
                if time.monotonic() + self.every_s > until:
                    break
                await asyncio.sleep(self.every_s)
            await asyncio.sleep(max(0.0, until - time.monotonic()))

        title = f"nothing broken, {self.minutes:g} min of load sampled every {self.every_s:g} s"
        return Fault("soak", title, 0, watch)


def _line(sample: Sample) -> str:
    return ", ".join(f"{name} {value:.1f}" for name, value in sample.values.items())


def chart(soak: Soak, path: Path) -> None:
    """The samples as a PNG: memory, descriptors and connections, broker and Redis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("Resident memory (MB)", [f"{role} RSS" for role in ROLES] + ["Redis memory"]),
        (
            "Open files and connections",
            [f"{role} open files" for role in ROLES] + ["PostgreSQL connections"],
        ),
        ("Messages in RabbitMQ's queues", ["queued messages"]),
    ]
    figure, axes = plt.subplots(len(panels), 1, figsize=(9, 8), sharex=True)
    for axis, (title, names) in zip(axes, panels, strict=True):
        for name in names:
            points = [(s.at_s / 60, s.values[name]) for s in soak.samples if name in s.values]
            axis.plot(*zip(*points, strict=True), marker=".", label=name)
        axis.axvline(soak.warm_s / 60, color="grey", linestyle=":", linewidth=1)
        axis.set_title(title, fontsize=10)
        axis.set_ylim(bottom=0)
        axis.legend(fontsize=8, loc="lower right")
        axis.grid(alpha=0.3)
    axes[-1].set_xlabel("minutes of load (dotted: end of the warm-up)")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def _number(value: float, unit: str) -> str:
    return f"{value:,.1f} {unit}".strip() if unit else f"{value:,.0f}"


def section(run: dict[str, Any], soak: Soak, verdict: Verdict, found: list[Growth]) -> str:
    date = run["date"]
    grown = [g for g in found if not g.passed]
    outcome = (
        "Nothing grew past its allowance; no event lost, no payment doubled.\n"
        if not grown and verdict.passed
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
        "|---|---|---|---|---|---|\n" + rows + "\n"
        f"![Samples of the soak](results/soak-{date}.png)\n\n" + outcome
    )


async def soak_run(soak: Soak, options: Options) -> tuple[Run, Verdict]:
    run = Run(options)
    async with world_of(run) as world:
        _, shop = await shops_of(run, world, ["warmup", "soak"])
        fault = soak.fault(run.env["SVC_DATABASE_URL"])
        verdict = await play(run, world, fault, shop, world.pods["api"].url)
    run.verdicts.append(verdict)
    return run, verdict


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m chaos.soak", description=__doc__)
    parser.add_argument("--minutes", type=float, default=30.0, help="length of the load")
    parser.add_argument("--every", type=float, default=60.0, help="seconds between samples")
    parser.add_argument(
        "--warm", type=float, help="minutes of warm-up (default 5, a third of shorter runs)"
    )
    parser.add_argument("--rate", type=float, default=FULL.rate, help="payments per second")
    parser.add_argument("--results", type=Path, default=HERE / "results")
    parser.add_argument("--readme", type=Path, help="Markdown file with the soak markers")
    return parser


def _record(args: argparse.Namespace, run: Run, soak: Soak, verdict: Verdict) -> bool:
    found = growths(soak.samples, soak.warm_s, soak.rate)
    summary = run.summary()
    args.results.mkdir(parents=True, exist_ok=True)
    stem = args.results / f"soak-{summary['date']}"
    body = {
        **summary,
        "soak": {"minutes": soak.minutes, "every_s": soak.every_s, "warm_s": soak.warm_s},
        "samples": [dataclasses.asdict(s) for s in soak.samples],
        "growth": [{**dataclasses.asdict(g), "passed": g.passed} for g in found],
        "scenarios": [dataclasses.asdict(verdict)],
    }
    stem.with_suffix(".json").write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n")
    chart(soak, stem.with_suffix(".png"))
    text = section(summary, soak, verdict, found)
    if args.readme is not None:
        report.update_readme(args.readme, text, BEGIN, END)
    print(text)
    return verdict.passed and all(g.passed for g in found)


async def _run(args: argparse.Namespace) -> int:
    warm = args.warm if args.warm is not None else min(5.0, args.minutes / 3)
    soak = Soak(args.minutes, args.every, warm * 60, args.rate)
    timing = dataclasses.replace(FULL, rate=args.rate, settle=60)
    run, verdict = await soak_run(soak, Options(timing=timing, faults=[]))
    return 0 if _record(args, run, soak, verdict) else 1


async def _main(args: argparse.Namespace) -> int:
    return await guarded(_run(args), args.minutes * 60 + 600)


if __name__ == "__main__":
    sys.exit(command(_parser(), _main))
