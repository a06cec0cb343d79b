"""The chart's Grafana dashboard (a ConfigMap the Grafana sidecar loads), KEDA's own RabbitMQ
URL beside a several-node ``SVC_AMQP_URL``, and the connection URLs that
``values-production.yaml`` shows."""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qs, urlsplit

import pytest

from svc.broker_urls import split_urls
from tests.deploy.chart import (
    PRODUCTION,
    Manifest,
    of_kind,
    one,
    production_values,
    render,
    render_error,
)
from tests.deploy.tools import CHART, DASHBOARD


def dashboards(manifests: list[Manifest]) -> list[Manifest]:
    return [
        m for m in of_kind(manifests, "ConfigMap") if m["metadata"]["name"].endswith("-dashboard")
    ]


def test_the_chart_reads_the_one_dashboard_file() -> None:
    linked = CHART / "files" / "svc-webhooks.json"
    assert linked.is_symlink() and linked.resolve() == DASHBOARD.resolve(), (
        "helm/svc/files/svc-webhooks.json must link to deploy/grafana/svc-webhooks.json"
    )


def test_no_dashboard_by_default() -> None:
    assert dashboards(render()) == []


def test_the_dashboard_configmap_carries_the_sidecars_label_and_the_file() -> None:
    configmap = one(render(production_values()), "ConfigMap", "svc-dashboard")
    metadata = configmap["metadata"]
    assert metadata["labels"]["grafana_dashboard"] == "1"
    assert metadata["labels"]["app.kubernetes.io/instance"] == "svc"
    assert metadata["annotations"] == {"grafana_folder": "Payments"}
    assert "namespace" not in metadata, "the release's namespace"
    (name, text), *_ = configmap["data"].items()
    assert name.endswith(".json") and len(configmap["data"]) == 1
    assert text == DASHBOARD.read_text(), "the file as it is, not templated"
    assert json.loads(text)["uid"] == "svc-webhooks"


def test_the_dashboard_label_folder_and_namespace_follow_the_values() -> None:
    values = {
        "metrics": {
            "grafanaDashboard": {
                "enabled": True,
                "label": "dashboards",
                "labelValue": "svc",
                "namespace": "monitoring",
                "labels": {"team": "payments"},
            }
        }
    }
    configmap = one(render(values, release="billing"), "ConfigMap", "billing-svc-dashboard")
    metadata = configmap["metadata"]
    assert metadata["namespace"] == "monitoring"
    assert metadata["labels"]["dashboards"] == "svc"
    assert metadata["labels"]["team"] == "payments"
    assert "grafana_dashboard" not in metadata["labels"]
    assert "annotations" not in metadata, "no folder: the sidecar's default"


def test_keda_refuses_a_chart_secret_naming_several_nodes() -> None:
    values = {
        "secrets": {"amqpUrl": "amqp://a@rabbitmq-0:5672/,amqp://a@rabbitmq-1:5672/"},
        "dispatcher": {"keda": {"enabled": True}},
    }
    with pytest.raises(render_error(), match="KEDA needs one RabbitMQ URL"):
        render(values)
    values["dispatcher"]["keda"]["hostSecretKey"] = "KEDA_AMQP_URL"  # type: ignore[index]
    values["secrets"]["existingSecret"] = "connections"  # type: ignore[index]
    auth = one(render(values), "TriggerAuthentication")
    assert auth["spec"]["secretTargetRef"][0]["key"] == "KEDA_AMQP_URL"


def example(key: str) -> str:
    """The value the production example's ``kubectl create secret`` lines give ``key``."""
    found = re.search(rf"{key}='([^']+)'", PRODUCTION.read_text())
    assert found, f"values-production.yaml shows no {key}"
    return found.group(1)


def test_production_example_names_every_rabbitmq_node_and_one_url_for_keda() -> None:
    nodes = split_urls(example("SVC_AMQP_URL"))
    assert len(nodes) == 3 and len({urlsplit(n).hostname for n in nodes}) == 3
    assert len(split_urls(example("KEDA_AMQP_URL"))) == 1
    assert production_values()["dispatcher"]["keda"]["hostSecretKey"] == "KEDA_AMQP_URL"


def test_production_example_names_two_database_hosts_and_wants_the_writable_one() -> None:
    url = urlsplit(example("url"))
    assert url.scheme == "postgresql"
    hosts = url.netloc.rsplit("@", 1)[1].split(",")
    assert len(hosts) == 2 and all(host.endswith(":5432") for host in hosts)
    query = parse_qs(url.query)
    assert query["target_session_attrs"] == ["read-write"]
    assert query["sslmode"] == ["require"]
