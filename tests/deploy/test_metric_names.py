"""The dashboard and the alerts name only metrics and labels that the code exports."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from svc.context import topology_of
from svc.metrics import OUTCOMES, STATUS_CLASSES, Metrics
from svc.settings import Settings
from tests.deploy.promql import Exported, refs
from tests.deploy.tools import ALERTS, DASHBOARD

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
    for metric, label, op, value in refs(expr).matchers:
        if label not in known or not re.fullmatch(r"[\w.|]+", value):
            continue
        for item in _values(op, value):
            assert item in known[label], f"{where}: {metric}{{{label}}} is never {item!r}"


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
