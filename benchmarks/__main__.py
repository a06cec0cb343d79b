"""``python -m benchmarks``: run the comparison, write JSON, a chart and the README table.

``make bench`` runs the full plan; ``--smoke`` runs every comparison with tiny counts in a
few seconds (the test suite does that so the harness cannot rot). Every run creates its own
PostgreSQL database, migrates it, points every service process at it and drops it at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import logging
import os
import shutil
import signal
import tempfile
from collections.abc import Coroutine
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks import report
from benchmarks.chart import chart
from benchmarks.machine import load, machine, versions, wait_for_quiet
from benchmarks.service import Stores
from benchmarks.suite import SMOKE, SYSTEMS, Plan, Suite
from benchmarks.targets import targets
from harness.database import admin_url, bench_database
from svc.crypto import new_key_text

log = logging.getLogger("benchmarks")

RESULTS = Path(__file__).parent / "results"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="tiny counts, a few seconds")
    parser.add_argument(
        "--events", type=int, help="events for the service (slow receivers too) and naive runs"
    )
    parser.add_argument("--payments", type=int, help="payments the payment-creation run makes")
    parser.add_argument("--outbox", type=int, help="events the outbox catch-up run sweeps")
    parser.add_argument(
        "--listing", type=int, help="events the listing run fills (and half as many payments)"
    )
    parser.add_argument(
        "--repeats", type=int, help="rounds of the compared systems (3; 1 with --smoke)"
    )
    parser.add_argument(
        "--only", default=",".join(SYSTEMS), help=f"comma-separated subset of {','.join(SYSTEMS)}"
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="directory for JSON and PNG")
    parser.add_argument(
        "--database-url",
        default=admin_url(),
        help="PostgreSQL admin URL where the run creates (and drops) its own database; "
        "default SVC_BENCH_DATABASE_URL, else SVC_TEST_DATABASE_URL, else the local server",
    )
    parser.add_argument("--readme", type=Path, help="README whose results table to replace")
    parser.add_argument(
        "--wait-load",
        type=float,
        default=0.0,
        help="first wait for a 1-minute load average below this",
    )
    parser.add_argument("--wait-max", type=float, default=600, help="longest wait for it, s")
    parser.add_argument("--keep-workdir", action="store_true", help="keep logs of the run")
    parser.add_argument(
        "--profile", type=Path, help="py-spy the throughput and outbox runs into this dir"
    )
    parser.add_argument("--throughput-only", action="store_true", help="skip the paced runs")
    return parser


async def main(args: argparse.Namespace) -> dict[str, Any]:
    # SIGTERM cancels the run like Ctrl-C does, so processes stop and the database is dropped.
    main_task = asyncio.current_task()
    assert main_task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, main_task.cancel)
    amqp = os.environ.get("SVC_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
    redis = os.environ.get("SVC_REDIS_URL", "redis://127.0.0.1:6379/0")
    plan: Plan = SMOKE if args.smoke else Plan()
    if args.events:
        plan = plan.scaled(args.events)
    if args.payments:
        plan = replace(plan, payments=args.payments)
    if args.outbox:
        plan = replace(plan, outbox_events=args.outbox)
    if args.listing:
        plan = replace(plan, listing_events=args.listing, listing_payments=args.listing // 2)
    if args.repeats is not None:
        if args.repeats < 1:
            raise SystemExit("--repeats must be at least 1")
        plan = replace(plan, repeats=args.repeats)
    only = tuple(name for name in args.only.split(",") if name)
    unknown = set(only) - set(SYSTEMS)
    if unknown:
        raise SystemExit(f"unknown systems: {', '.join(sorted(unknown))}")
    load_start = await wait_for_quiet(args.wait_load, args.wait_max) if args.wait_load else load()
    workdir = Path(tempfile.mkdtemp(prefix="svc-bench-"))
    started = datetime.datetime.now(datetime.UTC)
    try:
        async with bench_database(args.database_url) as database_url:
            stores = Stores(amqp, redis, database_url, new_key_text("bench"))
            suite = Suite(
                plan,
                stores,
                workdir,
                only,
                args.profile,
                not args.throughput_only,
                args.database_url,
            )
            results = await suite.run()
    finally:
        if args.keep_workdir:
            log.info("logs kept in %s", workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    finished = datetime.datetime.now(datetime.UTC)
    results.update(
        date=started.strftime("%Y-%m-%d"),
        started=started.isoformat(timespec="seconds"),
        minutes=round((finished - started).total_seconds() / 60, 1),
        smoke=args.smoke,
        load_average={"start": load_start, "end": load()},
        machine=machine(),
        versions=await versions(amqp, redis, args.database_url, results.pop("receiver")),
    )
    results["targets"] = targets(results)
    return results


def _run_loop(coroutine: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any]:
    try:
        import uvloop
    except ImportError:  # the ``fast`` extra is not installed
        return asyncio.run(coroutine)
    return uvloop.run(coroutine)


def run(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    args = _parser().parse_args(argv)
    try:
        # uvloop, as the service and the naive consumer run: the harness publishes during the
        # end-to-end runs, on the cores the system under test uses, so it should cost little.
        results = _run_loop(main(args))
    except asyncio.CancelledError:
        log.error("stopped by SIGTERM")
        return 128 + signal.SIGTERM
    args.out.mkdir(parents=True, exist_ok=True)
    # The listing run alone has a file of its own, next to the day's full run, and no chart.
    alone = args.only == "listing"
    stem = args.out / (results["date"] + ("-listing" if alone else ""))
    stem.with_suffix(".json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    if not alone:
        chart(results, stem.with_suffix(".png"))
    table = report.markdown(results, f"results/{stem.name}", chart=not alone)
    if args.readme:
        report.update_readme(args.readme, table)
    print(table)
    log.info("wrote %s.json%s", stem, "" if alone else f" and {stem}.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(run())
