"""``python -m benchmarks``: run the comparison; write its JSON and README section.
Every run creates, migrates and at the end drops a PostgreSQL database of its own (admin URL:
``SVC_BENCH_DATABASE_URL``, else ``SVC_TEST_DATABASE_URL``, else the local server)."""

from __future__ import annotations

import argparse
import asyncio
import datetime
import logging
import os
import signal
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks import report
from benchmarks.machine import load, machine, versions, wait_for_quiet
from benchmarks.service import Stores
from benchmarks.suite import SMOKE, SYSTEMS, Plan, Suite
from benchmarks.targets import targets
from benchmarks.workload import run_fast
from harness.database import admin_url, bench_database
from harness.results import update_readme, write_json
from svc.crypto import new_key_text

log = logging.getLogger("benchmarks")


async def main(args: argparse.Namespace, only: tuple[str, ...]) -> dict[str, Any]:
    # SIGTERM cancels the run like Ctrl-C does, so processes stop and the database is dropped.
    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    amqp = os.environ.get("SVC_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
    redis = os.environ.get("SVC_REDIS_URL", "redis://127.0.0.1:6379/0")
    plan: Plan = SMOKE if args.smoke else Plan()
    plan = replace(plan, repeats=args.repeats or plan.repeats)
    load_start = await wait_for_quiet(args.wait_load, 600) if args.wait_load else load()
    started = datetime.datetime.now(datetime.UTC)
    with tempfile.TemporaryDirectory(prefix="svc-bench-") as workdir:
        async with bench_database(admin_url()) as database_url:
            stores = Stores(amqp, redis, database_url, new_key_text("bench"))
            results = await Suite(plan, stores, Path(workdir), admin_url(), only).run()
    results.update(
        date=started.strftime("%Y-%m-%d"),
        started=started.isoformat(timespec="seconds"),
        minutes=round((datetime.datetime.now(datetime.UTC) - started).total_seconds() / 60, 1),
        smoke=args.smoke,
        load_average={"start": load_start, "end": load()},
        machine=machine(),
        versions=await versions(amqp, redis, admin_url(), results.pop("receiver")),
    )
    return results | {"targets": targets(results)}


def results_stem(date: str, smoke: bool, only: tuple[str, ...]) -> str:
    """The name of a run's results: the date for a full run; a smoke run, the listing alone
    and any other part of the suite get a suffix, so that none is written over a full run."""
    if smoke:
        return f"{date}-smoke"
    if only == ("listing",):
        return f"{date}-listing"
    return date if set(only) == set(SYSTEMS) else f"{date}-partial"


def run(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("pika").setLevel(logging.WARNING)  # Dramatiq's client, every close
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="tiny counts, a few minutes")
    parser.add_argument("--only", default=",".join(SYSTEMS), help=f"some of {','.join(SYSTEMS)}")
    parser.add_argument("--repeats", type=int, help="rounds of the compared systems (3, smoke 1)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--readme", type=Path, help="README whose results section to replace")
    parser.add_argument(
        "--wait-load", type=float, help="first wait up to 10 min for a 1-min load below this"
    )
    args = parser.parse_args(argv)
    only = tuple(name for name in args.only.split(",") if name)
    if unknown := set(only) - set(SYSTEMS):
        raise SystemExit(f"unknown systems: {', '.join(sorted(unknown))}")
    try:
        results = run_fast(main(args, only))  # uvloop, as the service runs: the harness is cheap
    except asyncio.CancelledError:
        log.error("stopped by SIGTERM")
        return 128 + signal.SIGTERM
    stem = args.out / results_stem(results["date"], args.smoke, only)
    write_json(stem.with_suffix(".json"), results)
    table = report.markdown(results, f"results/{stem.name}")
    if args.readme:
        update_readme(args.readme, table, report.BEGIN, report.END)
    print(table)
    log.info("wrote %s.json", stem)
    return 0


if __name__ == "__main__":
    raise SystemExit(run())
