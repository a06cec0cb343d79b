"""``python -m chaos``: run the fault suite, record it, exit 1 when a scenario failed (an event
lost, a payment doubled or not stored, a 500 answered, a check of its own not held; 2 when the
run itself failed, 3 when it overran its deadline)."""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import replace
from pathlib import Path

from chaos import report
from chaos.faults import catalogue
from chaos.scenario import FULL, SMOKE
from chaos.suite import Options, Run, command, guarded, run_suite

log = logging.getLogger("chaos")

HERE = Path(__file__).resolve().parent
SMOKE_FAULTS = ("dispatcher-kill", "redis-flushall")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m chaos", description=__doc__)
    parser.add_argument(
        "--smoke", action="store_true", help="two tiny scenarios, a few seconds each"
    )
    parser.add_argument("--only", help="comma-separated scenario names to run")
    parser.add_argument("--rate", type=float, help="payments per second (default 50; smoke 50)")
    parser.add_argument(
        "--results", type=Path, help="folder for <date>.json (default chaos/results; smoke: none)"
    )
    parser.add_argument(
        "--label",
        help="results go to <date>-<label>.json (default with --only: the scenario names)",
    )
    parser.add_argument(
        "--readme",
        type=Path,
        help="Markdown file whose results section gets the table (default chaos/README.md, "
        "for a full run only)",
    )
    parser.add_argument(
        "--deadline", type=float, help="give up after this many seconds (default 1500; smoke 120)"
    )
    return parser


def options(args: argparse.Namespace) -> Options:
    timing = SMOKE if args.smoke else FULL
    if args.rate:
        timing = replace(timing, rate=args.rate)
    faults = catalogue(3.0, 3.0, 3.0) if args.smoke else catalogue()
    wanted = args.only.split(",") if args.only else (SMOKE_FAULTS if args.smoke else None)
    if wanted is not None:
        unknown = set(wanted) - {f.name for f in faults}
        if unknown:
            raise SystemExit(f"unknown scenarios: {', '.join(sorted(unknown))}")
        faults = [f for f in faults if f.name in wanted]
    return Options(timing=timing, faults=faults, smoke=args.smoke)


def record(args: argparse.Namespace, run: Run) -> None:
    """The results file, and the README's table after a full run (a run of some scenarios
    leaves the recorded full run's table alone and gets a file of its own)."""
    summary = run.summary()
    label = args.label or (args.only.replace(",", "-") if args.only else None)
    if label:
        summary["label"] = label
    results = args.results or (None if args.smoke else HERE / "results")
    readme = args.readme or (None if args.smoke or args.only else HERE / "README.md")
    if results is not None:
        log.info("results in %s", report.write_results(results, summary, run.verdicts))
    if readme is not None:
        report.update_readme(readme, report.section(summary, run.verdicts))
    print(report.table(run.verdicts))


async def _run(args: argparse.Namespace) -> int:
    run = await run_suite(options(args))
    record(args, run)
    failed = [f"{v.scenario} ({', '.join(v.failures())})" for v in run.verdicts if not v.passed]
    if failed:
        log.error("failed: %s", "; ".join(failed))
        return 1
    return 0


async def _main(args: argparse.Namespace) -> int:
    return await guarded(_run(args), args.deadline or (120.0 if args.smoke else 1500.0))


if __name__ == "__main__":
    sys.exit(command(_parser(), _main))
