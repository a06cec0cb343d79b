"""The fault suite end to end with two tiny scenarios, so that ``make chaos`` cannot rot."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.harness

ROOT = Path(__file__).resolve().parents[2]
NEEDED = ("rabbitmq-server", "rabbitmqctl", "redis-server")


def _missing() -> list[str]:
    missing = [tool for tool in NEEDED if shutil.which(tool) is None]
    if not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")) and not shutil.which("initdb"):
        missing.append("initdb")
    return missing


def _chaos_folders() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("svc-chaos-*")}


@pytest.mark.timeout(120)
def test_smoke_run_records_two_clean_scenarios(tmp_path: Path) -> None:
    if missing := _missing():
        message = f"the fault suite needs {', '.join(missing)}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    readme = tmp_path / "README.md"
    readme.write_text("# Faults\n\n<!-- results:begin -->\n<!-- results:end -->\n")
    before = _chaos_folders()
    command = [sys.executable, "-m", "chaos", "--smoke", "--results", str(tmp_path)]
    process = subprocess.Popen(
        [*command, "--readme", str(readme)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = process.communicate(timeout=100)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGTERM)  # the harness cleans up before it exits
        out, err = process.communicate(timeout=15)
        pytest.fail(f"the smoke run took over 100 s: {err[-3000:]}")
    assert process.returncode == 0, err[-4000:]

    [results_file] = tmp_path.glob("*.json")
    results = json.loads(results_file.read_text())
    assert results["smoke"] is True and results["passed"] is True
    by_name = {s["scenario"]: s for s in results["scenarios"]}
    assert set(by_name) == {"dispatcher-kill", "redis-flushall"}
    for scenario in by_name.values():
        assert scenario["accepted"] > 0
        assert scenario["lost"] == 0 and scenario["double_payments"] == 0
        assert set(scenario["delivered"].values()) == {scenario["accepted"]}
        assert scenario["recovered"] is True
    assert by_name["dispatcher-kill"]["role_deaths"]["dispatcher"] == 1  # restarted as a pod
    assert "| dispatcher-kill (SIGKILL of the dispatcher) |" in out
    assert "| redis-flushall (Redis FLUSHALL) |" in readme.read_text()
    assert _chaos_folders() <= before  # its temporary folder is gone
