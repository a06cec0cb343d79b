"""``python -m chaos``: run the fault suite and record it; exit 1 when a scenario failed, 2 when
the run could not be set up, 3 when it overran its deadline."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from chaos import report
from chaos.faults import catalogue
from chaos.suite import FULL, SMOKE, Run, command, run_suite
from harness.results import update_readme, write_json

log = logging.getLogger("chaos")

HERE = Path(__file__).resolve().parent
SMOKE_FAULTS = ("dispatcher-kill", "redis-flushall")


def planned(args: argparse.Namespace) -> Run:
    faults = catalogue(3.0, 3.0, 3.0) if args.smoke else catalogue()
    wanted = args.only.split(",") if args.only else (SMOKE_FAULTS if args.smoke else None)
    if wanted is not None:
        if unknown := set(wanted) - {f.name for f in faults}:
            raise SystemExit(f"unknown scenarios: {', '.join(sorted(unknown))}")
        faults = [f for f in faults if f.name in wanted]
    return Run(SMOKE if args.smoke else FULL, faults, smoke=args.smoke)


def record(args: argparse.Namespace, run: Run) -> None:
    """The results file (chaos/results by default), and the README's table after a full run:
    a run of some scenarios gets a file of its own, named by them."""
    summary = run.summary()
    if args.only:
        summary["label"] = args.only.replace(",", "-")
    results = args.results or (None if args.smoke else HERE / "results")
    readme = args.readme or (None if args.smoke or args.only else HERE / "README.md")
    if results is not None:
        log.info("results in %s", write_json(results / report.results_name(summary), summary))
    if readme is not None:
        update_readme(readme, report.section(summary, run.verdicts), report.BEGIN, report.END)
    print(report.table(run.verdicts))


async def _run(args: argparse.Namespace) -> int:
    async with asyncio.timeout(120.0 if args.smoke else 1500.0):
        run = await run_suite(planned(args))
    record(args, run)
    failed = [f"{v.scenario} ({', '.join(v.failures())})" for v in run.verdicts if not v.passed]
    if failed:
        log.error("failed: %s", "; ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m chaos", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="two tiny scenarios, seconds each")
    parser.add_argument("--only", help="comma-separated scenario names to run")
    parser.add_argument("--results", type=Path, help="folder of the results file")
    parser.add_argument("--readme", type=Path, help="Markdown file whose results section to set")
    sys.exit(command(parser, _run))
