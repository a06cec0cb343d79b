"""``python -m benchmarks.longpoll``: long polls and payment streams held by one API process.

The same measurement as the ``longpolls`` section of ``python -m benchmarks``
(``benchmarks.longpoll.hold``), on a PostgreSQL database of its own (created, migrated and
dropped) and the machine's RabbitMQ and Redis, with the sizes chosen on the command line.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import logging
import os
import platform
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.longpoll import section
from benchmarks.longpoll.hold import measure
from benchmarks.longpoll.plan import SMOKE, Sizes
from benchmarks.service import Stores
from harness.database import admin_url, bench_database, server_version
from harness.processes import Processes
from svc.crypto import new_key_text

RESULTS = Path(__file__).parent / "results"


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.longpoll", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, a few seconds")
    parser.add_argument("--waits", type=int, help="long polls held (default 10,000)")
    parser.add_argument("--streams", type=int, help="payment streams held (default 5,000)")
    parser.add_argument("--changes", type=int, help="payments changed (default 1,000)")
    parser.add_argument("--spread", type=float, help="seconds the changes are spread over")
    parser.add_argument("--clients", type=int, help="client processes (default 2)")
    parser.add_argument("--batch", type=int, help="connections opened per round")
    parser.add_argument("--out", type=Path, default=RESULTS, help="directory for the JSON")
    parser.add_argument("--profile", type=Path, help="py-spy the API during the changes")
    parser.add_argument(
        "--database-url",
        default=admin_url(),
        help="PostgreSQL admin URL where the run creates (and drops) its own database",
    )
    return parser


def sizes_of(args: argparse.Namespace) -> Sizes:
    sizes = SMOKE if args.smoke else Sizes()
    chosen = {
        "waits": args.waits,
        "streams": args.streams,
        "changes": args.changes,
        "spread_s": args.spread,
        "clients": args.clients,
        "batch": args.batch,
    }
    return replace(sizes, **{k: v for k, v in chosen.items() if v is not None})


async def run(args: argparse.Namespace) -> dict[str, Any]:
    amqp = os.environ.get("SVC_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
    redis = os.environ.get("SVC_REDIS_URL", "redis://127.0.0.1:6379/0")
    workdir = Path(tempfile.mkdtemp(prefix="svc-longpoll-"))
    procs = Processes(workdir)
    started = datetime.datetime.now(datetime.UTC)
    try:
        async with bench_database(args.database_url) as database_url:
            stores = Stores(amqp, redis, database_url, new_key_text("bench"))
            postgresql = await server_version(database_url)
            try:
                result = await measure(procs, stores, sizes_of(args), args.profile)
            finally:
                await procs.stop_all()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    machine = {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "postgresql": postgresql,
    }
    return {
        "benchmark": "longpoll",
        "date": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine,
        **result,
    }


def main() -> None:
    args = parser().parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("benchmarks").setLevel(logging.INFO)
    result = asyncio.run(run(args))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"longpoll-{result['date'][:10]}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print("\n".join(section.rows(result)))
    for goal in section.targets(result):
        met = goal.value is not None and goal.check(goal.value)
        print(f"{'met' if met else 'NOT met'}: {goal.name} = {goal.value} ({goal.goal})")
    print(f"written to {path}")


if __name__ == "__main__":
    main()
