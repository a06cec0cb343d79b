"""The benchmark harness end to end with tiny counts, so that ``make bench`` cannot rot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_smoke(only: str, out: Path, service_urls: tuple[str, str]) -> dict[str, Any]:
    amqp_url, redis_url = service_urls
    env = {**os.environ, "SVC_AMQP_URL": amqp_url, "SVC_REDIS_URL": redis_url}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--smoke", "--only", only, "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=170,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    [result_file] = out.glob("*.json")
    [chart] = out.glob("*.png")
    assert chart.read_bytes().startswith(b"\x89PNG")
    results: dict[str, Any] = json.loads(result_file.read_text())
    assert results["smoke"] is True
    assert results["machine"]["cores"] >= 1
    assert results["versions"]["rabbitmq"] and results["load_average"]["end"]
    assert "| target | measured | goal | met |" in done.stdout
    return results


def assert_all_delivered(rows: list[dict[str, Any]], names: list[str]) -> None:
    assert [row["system"] for row in rows] == names
    for row in rows:
        expected = row.get("healthy_events", row["events"])
        assert row["delivered"] == expected, row
        assert row.get("unsigned", 0) == 0, row


@pytest.mark.timeout(180)
def test_service_and_naive_runs(tmp_path: Path, service_urls: tuple[str, str]) -> None:
    names = ["svc1", "svc2", "naive1", "naive2"]
    results = run_smoke(",".join([*names, "storm"]), tmp_path, service_urls)

    assert_all_delivered(results["throughput"], names)
    assert_all_delivered(results["latency"], names)
    for row in results["throughput"]:
        assert row["rate_per_s"] > 0
    svc1 = results["throughput"][0]
    assert svc1["peak_rss_mb"] > 0
    assert svc1["counters"]["deliveries_success"] >= svc1["events"]  # metrics stay on
    isolation = results["isolation"]
    assert isolation["hanging_endpoints"] == 1
    assert isolation["delivered"] == isolation["healthy_events"] < isolation["events"]
    storm = results["storm"]
    assert storm["failed_attempts"] > 0  # the endpoints really failed first
    assert storm["missing"] == 0 and storm["delivered"] == storm["events"]
    targets = {t["target"]: t for t in results["targets"]}
    assert targets["retry storm: events missing after recovery"]["met"] is True


@pytest.mark.timeout(180)
def test_framework_runs(tmp_path: Path, service_urls: tuple[str, str]) -> None:
    names = ["celery-prefork", "celery-gevent", "dramatiq"]
    results = run_smoke(",".join(names), tmp_path, service_urls)

    assert_all_delivered(results["throughput"], names)
    assert_all_delivered(results["latency"], names)
    for row in results["throughput"]:
        assert row["cpu_us_per_delivery_worker"] > 0
