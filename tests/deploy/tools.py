"""Finding the deploy tooling (promtool, hadolint, helm SDK): skip on a laptop, fail in CI."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
CHART = ROOT / "helm" / "svc"
ALERTS = DEPLOY / "prometheus" / "svc-alerts.yaml"
ALERT_TESTS = DEPLOY / "prometheus" / "svc-alerts.test.yaml"
DASHBOARD = DEPLOY / "grafana" / "svc-webhooks.json"


def missing(what: str, how: str) -> NoReturn:
    """CI installs every tool (.ci/run, the test extra), so there a missing one is a failure."""
    message = f"{what} is not installed ({how})"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def tool(name: str, how: str) -> str:
    """The path of ``name``, looked up next to this Python first (pip-installed tools)."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        missing(name, how)
    return found
