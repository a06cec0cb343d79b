"""The Grafana dashboard is importable and shows every panel operators need."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.deploy.tools import DASHBOARD


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in dashboard["panels"] if p["type"] != "row"]


def test_importable_shape(dashboard: dict[str, Any]) -> None:
    assert dashboard["uid"] and dashboard["title"] and dashboard["schemaVersion"] >= 36
    assert "id" not in dashboard or dashboard["id"] is None, "an id clashes on import"
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for panel in panels(dashboard):
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${datasource}", panel["title"]
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24


REQUIRED = {
    # panel purpose: text that its queries must contain
    "delivery rate by outcome": ["sum by (outcome)", "svc_deliveries_total"],
    "success ratio": ['outcome="success"', "/ sum(rate(svc_deliveries_total"],
    "delivery duration p50/p95/p99": [
        "histogram_quantile(0.5,",
        "histogram_quantile(0.95,",
        "histogram_quantile(0.99,",
        "svc_delivery_duration_seconds_bucket",
    ],
    "event-to-delivery lag": ["svc_delivery_lag_seconds_bucket"],
    "queue depths with every delay queue": ["max by (queue) (svc_queue_messages"],
    "retries scheduled": ["svc_retries_scheduled_total"],
    "exhausted jobs": ["svc_deliveries_exhausted_total"],
    "in-flight per pod": ["sum by (pod) (svc_deliveries_in_flight"],
    "API request rate": ["svc_http_requests_total"],
    "API latency": ["svc_http_request_duration_seconds_bucket"],
    "API errors": ['status=~"[45].."'],
    "open long polls": ["svc_long_polls_open"],
    "publishers blocked by RabbitMQ": ["svc_amqp_blocked"],
}


@pytest.mark.parametrize("purpose", sorted(REQUIRED))
def test_panel_is_there(dashboard: dict[str, Any], purpose: str) -> None:
    found = [
        p["title"]
        for p in panels(dashboard)
        if all(any(part in t["expr"] for t in p["targets"]) for part in REQUIRED[purpose])
    ]
    assert found, f"no panel shows {purpose}"


def test_queue_depths_are_not_filtered_to_named_queues(dashboard: dict[str, Any]) -> None:
    # Delay queues are named after the ladder (delay.<ms>ms); a queue filter would hide them.
    for panel in panels(dashboard):
        for target in panel["targets"]:
            if "svc_queue_messages" in target["expr"]:
                assert "queue=" not in target["expr"] and "queue!" not in target["expr"]
