"""The benchmark harness end to end with tiny counts, so that ``make bench`` cannot rot."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from tests.databases import Databases

pytestmark = pytest.mark.harness

ROOT = Path(__file__).resolve().parents[2]


def run_smoke(
    only: str,
    out: Path,
    service_urls: tuple[str, str],
    databases: Databases,
    repeats: int = 1,
) -> dict[str, Any]:
    amqp_url, redis_url = service_urls
    env = {**os.environ, "SVC_AMQP_URL": amqp_url, "SVC_REDIS_URL": redis_url}
    env["SVC_BENCH_DATABASE_URL"] = databases.admin_url
    readme = out / "README.md"
    readme.write_text("# Benchmarks\n\n<!-- results:begin -->\n<!-- results:end -->\n")
    command = [sys.executable, "-m", "benchmarks", "--smoke", "--only", only, "--out", str(out)]
    command += ["--repeats", str(repeats)]
    done = subprocess.run(
        [*command, "--readme", str(readme)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=170,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    [result_file] = out.glob("*.json")
    results: dict[str, Any] = json.loads(result_file.read_text())
    assert results["smoke"] is True
    assert results["machine"]["cores"] >= 1
    assert results["versions"]["rabbitmq"] and results["load_average"]["end"]
    assert "| target | measured | goal | met |" in done.stdout
    assert "| target | measured | goal | met |" in readme.read_text()
    assert results["versions"]["postgresql"]
    made = re.findall(r"database (svcbench_\w+) created", done.stderr)
    assert made, "every run works in a database of its own"
    for database in made:  # the run's, and those of runs that need one of their own
        assert f"database {database} dropped" in done.stderr
        assert not asyncio.run(_exists(databases.admin_url, database))  # the run cleaned up
    return results


async def _exists(admin_url: str, database: str) -> bool:
    conn = await asyncpg.connect(admin_url, timeout=10)
    try:
        return bool(
            await conn.fetchval("SELECT count(*) FROM pg_database WHERE datname = $1", database)
        )
    finally:
        await conn.close()


def assert_all_delivered(rows: list[dict[str, Any]], names: list[str]) -> None:
    assert [row["system"] for row in rows] == names
    for row in rows:
        expected = row.get("healthy_events", row["events"])
        assert row["delivered"] == expected, row


@pytest.mark.timeout(180)
def test_service_and_naive_runs(
    tmp_path: Path, service_urls: tuple[str, str], databases: Databases
) -> None:
    names = ["svc1", "svc2", "naive1", "naive2"]
    results = run_smoke(",".join([*names, "storm"]), tmp_path, service_urls, databases)

    assert_all_delivered(results["throughput"], names)
    assert_all_delivered(results["latency"], ["svc1", "svc2"])  # the rows the targets read
    for row in results["throughput"]:
        assert row["rate_per_s"] > 0
    svc1 = results["throughput"][0]
    assert svc1["peak_rss_mb"] > 0
    for row in results["throughput"][:2]:  # one delivery job per delivery
        assert row["input"] == "delivery jobs", row
    isolation = results["isolation"]
    assert isolation["hanging_endpoints"] == 1
    assert isolation["delivered"] == isolation["healthy_events"] < isolation["events"]
    storm = results["storm"]
    assert storm["failed_attempts"] > 0  # the endpoints really failed first
    assert storm["missing"] == 0 and storm["delivered"] == storm["events"]
    targets = {t["target"]: t for t in results["targets"]}
    assert targets["retry storm: events missing after recovery"]["met"] is True


@pytest.mark.timeout(180)
def test_framework_runs(
    tmp_path: Path, service_urls: tuple[str, str], databases: Databases
) -> None:
    names = ["celery-prefork", "celery-gevent", "dramatiq"]
    results = run_smoke(",".join(names), tmp_path, service_urls, databases)

    assert_all_delivered(results["throughput"], names)
    assert results["latency"] == []  # no target reads their latency
    for row in results["throughput"]:
        assert row["cpu_us_per_delivery_worker"] > 0, row


@pytest.mark.timeout(180)
def test_one_hop_runs(tmp_path: Path, service_urls: tuple[str, str], databases: Databases) -> None:
    names = ["svc1-e2e", "svc2-e2e", "svc1-slow"]
    only = ",".join([*names, "outbox"])
    results = run_smoke(only, tmp_path, service_urls, databases, repeats=2)

    assert_all_delivered(results["throughput"], names)
    for row in results["throughput"]:
        # Each round's run delivered each event once: a later round's organisations do not
        # hold the endpoints of an earlier round's.
        assert len(row["runs"]) == 2, row
        for run in row["runs"]:
            assert run["delivered"] == run["events"] and run["duplicates"] == 0, run
    assert results["latency"] == []  # end-to-end rows have no paced run
    for row in results["throughput"]:
        assert row["rate_per_s"] > 0 and row["duration_s"] > 0, row
    for row in results["throughput"][:2]:  # events in, deliveries out
        assert row["input"] == "events", row
        assert row["cpu_us_per_delivery_dispatcher"] > 0, row
    slow = results["throughput"][2]
    assert slow["input"] == "delivery jobs"  # like svc1, only the receivers are slow
    plan = results["plan"]
    # The slow receiver really answered late: it logged no delivery quicker than its delay.
    assert slow["receiver_ms_min"] >= plan["slow_delay"] * 1000 - 1 > 0, slow
    assert slow["peak_rss_mb"] > 0
    swept = results["outbox"]
    assert swept["events"] == plan["events"] > 0
    assert swept["rate_per_s"] > 0  # the outbox emptied: every row was swept
    targets = {t["target"]: t for t in results["targets"]}
    assert targets["outbox catch-up, events/s per scheduler"]["met"] is not None
    assert targets["svc 2 dispatchers end to end ÷ 1 dispatcher end to end"]["met"] is not None
    readme = (tmp_path / "README.md").read_text()
    for row in results["throughput"]:
        assert f"| {row['label']} | {row['events']} | {row['delivered']} |" in readme
    assert f"| {swept['label']} | {swept['events']} |" in readme


@pytest.mark.timeout(180)
def test_api_sections(tmp_path: Path, service_urls: tuple[str, str], databases: Databases) -> None:
    """The API's side of ``make bench`` (``benchmarks.sections``) in one smoke run: every
    section measures every target of its own, and they are listed in the order of the
    sections, after the delivery targets."""
    from benchmarks.sections import sections

    keys = [section.KEY for section in sections()]
    results = run_smoke(",".join(keys), tmp_path, service_urls, databases)
    for key in keys:
        assert results[key], key
    names = [target["target"] for target in results["targets"] if target["value"] is not None]
    words = ["naive API|rate limiting", "payment to webhook|payment creation:", "long polls"]
    words += ["100 endpoints", "tracing"]
    section_of = [next(i for i, w in enumerate(words) if re.search(w, n)) for n in names]
    assert section_of == sorted(section_of) and set(section_of) == set(range(len(words))), names
    limited = results["api-ceiling"]["rate_limit"]  # rate limiting's cost: counted, not refused
    assert set(limited["statuses"]) == {"201"} and limited["limited_ratio"] > 0
    capacity = results["webhook-latency"]  # the capacity run's webhooks all arrived
    assert capacity["capacity_created"] > 0 and capacity["capacity_missing"] == 0
    for section in sections():
        named = [goal.name for goal in section.targets(results[section.KEY])]
        assert named and all(
            target["value"] is not None
            for target in results["targets"]
            if target["target"] in named
        ), section.KEY
