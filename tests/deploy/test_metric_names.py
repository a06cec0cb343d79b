"""The dashboard, the alerts and the operating pages of the docs name only metrics, labels and
alerts that exist: the code exports the metrics, deploy/prometheus holds the alerts."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from svc.context import topology_of
from svc.metrics import NOTICE_OUTCOMES, OUTCOMES, STATUS_CLASSES, Metrics
from svc.settings import Settings
from tests.deploy.promql import Exported, refs
from tests.deploy.tools import ALERTS, DASHBOARD, ROOT

OPERATING = ROOT / "docs" / "operating"
METRICS_PAGE = OPERATING / "metrics.md"
ALERTS_PAGE = OPERATING / "alerts.md"

# Labels Prometheus adds to every scraped series (the ServiceMonitor adds the Kubernetes ones).
TARGET_LABELS = frozenset({"namespace", "pod", "instance", "job", "service", "container"})


def dashboard_queries() -> Iterator[tuple[str, str, str]]:
    """(panel title, expression, legend) of every dashboard query."""
    dashboard = json.loads(DASHBOARD.read_text())
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            yield panel["title"], target["expr"], target.get("legendFormat", "")
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            yield f"variable {variable['name']}", variable["query"]["query"], ""


def alert_queries() -> Iterator[tuple[str, str, str]]:
    for group in yaml.safe_load(ALERTS.read_text())["groups"]:
        for rule in group["rules"]:
            yield rule["alert"], rule["expr"], ""


QUERIES = [*dashboard_queries(), *alert_queries()]


@pytest.fixture(scope="module")
def exported() -> Exported:
    return Exported.of(Metrics().registry)


def queue_roles() -> set[str]:
    settings = Settings()
    topology = topology_of(settings)
    prefix = len(topology.namespace) + 1
    return {name[prefix:] for name in topology.work_queues()}


def test_there_is_something_to_check() -> None:
    assert len([q for q in QUERIES if "svc_" in q[1]]) >= 20


@pytest.mark.parametrize(("where", "expr", "legend"), QUERIES, ids=[q[0] for q in QUERIES])
def test_query_names_exported_metrics_and_labels(
    where: str, expr: str, legend: str, exported: Exported
) -> None:
    found = refs(expr)
    usable: set[str] = set(TARGET_LABELS)
    for metric, labels in found.metrics.items():
        assert metric in exported.labels, f"{where}: {metric} is not exported by svc.metrics"
        unknown = labels - exported.labels[metric] - TARGET_LABELS
        assert not unknown, f"{where}: {metric} has no label {sorted(unknown)}"
        usable |= exported.labels[metric]
    if found.metrics:
        unknown = found.grouping - usable
        assert not unknown, f"{where}: grouping by {sorted(unknown)}, which no metric has"
    for label in re.findall(r"\{\{\s*(\w+)\s*\}\}", legend):
        assert label in found.grouping, f"{where}: legend names {label}, not kept by the query"


def _values(op: str, value: str) -> list[str]:
    return value.split("|") if op in ("=~", "!~") else [value]


@pytest.mark.parametrize(("where", "expr", "legend"), QUERIES, ids=[q[0] for q in QUERIES])
def test_matched_label_values_exist(where: str, expr: str, legend: str) -> None:
    known: dict[str, Any] = {
        "outcome": set(OUTCOMES),
        "status_class": set(STATUS_CLASSES),
        "queue": queue_roles(),
    }
    of_metric = {("svc_notices_total", "outcome"): set(NOTICE_OUTCOMES)}
    for metric, label, op, value in refs(expr).matchers:
        if label not in known or not re.fullmatch(r"[\w.|]+", value):
            continue
        values = of_metric.get((metric, label), known[label])
        for item in _values(op, value):
            assert item in values, f"{where}: {metric}{{{label}}} is never {item!r}"


def test_the_checker_catches_unknown_names(exported: Exported) -> None:
    with pytest.raises(AssertionError, match="not exported"):
        test_query_names_exported_metrics_and_labels(
            "probe", "rate(svc_deliveries_sent_total[5m])", "", exported
        )
    with pytest.raises(AssertionError, match="has no label"):
        test_query_names_exported_metrics_and_labels(
            "probe", 'rate(svc_deliveries_total{endpoint="x"}[5m])', "", exported
        )
    with pytest.raises(AssertionError, match="grouping by"):
        test_query_names_exported_metrics_and_labels(
            "probe", "sum by (reason) (rate(svc_deliveries_total[5m]))", "", exported
        )
    with pytest.raises(AssertionError, match="never"):
        test_matched_label_values_exist("probe", 'svc_deliveries_total{outcome="ok"}', "")


def _operating_text() -> str:
    return "\n".join(page.read_text() for page in sorted(OPERATING.glob("*.md")))


def documented_metrics(text: str) -> set[str]:
    """Metric names written as code (``svc_…``) in ``text``, label matchers and all."""
    return set(re.findall(r"`(svc_[a-z0-9_]+)", text))


def exported_names() -> set[str]:
    """Every name a reader may use: sample names and the families they come from."""
    registry = Metrics().registry
    return set(Exported.of(registry).labels) | {family.name for family in registry.collect()}


def test_every_metric_the_operating_pages_name_is_exported() -> None:
    named = documented_metrics(_operating_text())
    assert len(named) >= 20
    assert named - exported_names() == set(), "docs/operating names metrics the code lacks"


def test_the_metrics_table_lists_every_exported_metric() -> None:
    rows = [line for line in METRICS_PAGE.read_text().splitlines() if line.startswith("| `svc_")]
    listed = {row.split("`")[1] for row in rows}
    registry = Metrics().registry
    exported = set()
    for family in registry.collect():
        kind = family.type
        exported.add(
            family.name + ("_total" if kind == "counter" else "_info" if kind == "info" else "")
        )
    assert listed == exported


def alert_names() -> set[str]:
    return {
        rule["alert"]
        for group in yaml.safe_load(ALERTS.read_text())["groups"]
        for rule in group["rules"]
    }


def test_every_alert_the_operating_pages_name_exists() -> None:
    named = set(re.findall(r"\bSvc[A-Z][A-Za-z]+\b", _operating_text()))
    assert named - alert_names() == set(), "docs/operating names alerts the rules lack"


def test_the_alerts_page_has_a_runbook_for_every_alert() -> None:
    rows = [line for line in ALERTS_PAGE.read_text().splitlines() if line.startswith("| `Svc")]
    assert {row.split("`")[1] for row in rows} == alert_names()


def test_the_page_checks_catch_unknown_names() -> None:
    assert documented_metrics("`svc_deliveries_sent_total` and `svc_amqp_blocked`") == {
        "svc_deliveries_sent_total",
        "svc_amqp_blocked",
    }
    assert "svc_deliveries_sent_total" not in exported_names()
    assert "svc_delivery_lag_seconds" in exported_names()
