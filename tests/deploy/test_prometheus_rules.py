"""The alert rules are valid Prometheus rules, each has a runbook line and a promtool unit test."""

from __future__ import annotations

import subprocess

import yaml

from tests.deploy.tools import ALERT_TESTS, ALERTS, tool

HOW = "apt-get install prometheus, which gives promtool"
REQUIRED = {  # what the issue asks the alerts to watch, by alert name
    "SvcDeliveryBacklogGrowing",
    "SvcDeliverySuccessRatioLow",
    "SvcDeliveryLagHigh",
    "SvcDeliveriesExhausted",
    "SvcRoleNoReadyPods",
    "SvcAmqpBlocked",
}


def alerts() -> list[dict[str, object]]:
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [tool("promtool", HOW), *args],
        cwd=ALERTS.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_promtool_check_rules() -> None:
    result = promtool("check", "rules", ALERTS.name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in result.stdout


def test_promtool_unit_tests_pass() -> None:
    result = promtool("test", "rules", ALERT_TESTS.name)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_is_there_with_severity_summary_and_one_runbook_line() -> None:
    names = {str(rule["alert"]) for rule in alerts()}
    assert names >= REQUIRED
    for rule in alerts():
        annotations = rule["annotations"]
        assert isinstance(annotations, dict)
        runbook = annotations.get("runbook", "")
        assert runbook and "\n" not in runbook.strip(), f"{rule['alert']}: one runbook line"
        assert annotations.get("summary"), rule["alert"]
        labels = rule["labels"]
        assert isinstance(labels, dict) and labels["severity"] in ("warning", "critical")


def test_every_alert_has_a_unit_test_that_sees_it_fire_and_stay_quiet() -> None:
    cases = yaml.safe_load(ALERT_TESTS.read_text())
    assert cases["rule_files"] == [ALERTS.name]
    firing: set[str] = set()
    quiet: set[str] = set()
    for case in cases["tests"]:
        for check in case.get("alert_rule_test", []):
            (firing if check["exp_alerts"] else quiet).add(check["alertname"])
    names = {str(rule["alert"]) for rule in alerts()}
    assert names <= firing, f"no firing case for {sorted(names - firing)}"
    assert names <= quiet, f"no quiet case for {sorted(names - quiet)}"
