"""The Helm chart lints strictly and renders valid manifests that run the service safely."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest
import yaml

from cli.main import load_settings
from svc.crypto import SecretBox
from svc.durations import parse_duration
from svc.settings import Settings
from tests.deploy.chart import (
    KUBE_VERSIONS,
    Manifest,
    lint,
    notes,
    of_kind,
    one,
    production_values,
    render,
    render_error,
    validate,
)
from tests.deploy.tools import ALERTS, CHART

ROLES = ("api", "scheduler", "dispatcher")
VARIANTS = {"default": None, "production": production_values()}
# Settings the chart sets itself rather than through `config:` (the URLs and the key come from
# Secrets; the HTTP address and ports are fixed by the pod spec).
SET_BY_CHART = {
    "amqp_url",
    "redis_url",
    "database_url",
    "secret_key",
    "http_host",
    "http_port",
    "ops_port",
    "smtp_password",
}
# Development keys published with earlier versions of the chart and with deploy/compose.yaml:
# anyone can decrypt what they encrypted.
PUBLISHED_KEYS = (
    "IGIECoN6M8Bhf8Y0I3zQQW3rnp0G2RxWiOrjlHrCrYI",
    "b123JFXBcdN3N-Qy32DWLfIlMSxF-I6IqJFSfSVM68s",
)
# Variables that must reach every container from a Secret, never from the ConfigMap or a value.
FROM_SECRET_REFS = ("SVC_DATABASE_URL", "SVC_SECRET_KEY")
EXISTING = {
    "database": {"existingSecret": "pg-credentials", "existingSecretKey": "dsn"},
    "secretKey": {"existingSecret": "svc-keys", "existingSecretKey": "current"},
}


@pytest.fixture(scope="module", params=sorted(VARIANTS))
def variant(request: pytest.FixtureRequest) -> tuple[str, list[Manifest]]:
    return request.param, render(VARIANTS[request.param])


@pytest.fixture(scope="module")
def default() -> list[Manifest]:
    return render()


@pytest.fixture(scope="module")
def production() -> list[Manifest]:
    return render(production_values())


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_lint_strict_finds_nothing(name: str) -> None:
    report = lint(VARIANTS[name])
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
def test_every_manifest_validates_strictly(
    variant: tuple[str, list[Manifest]], kube_version: str
) -> None:
    for manifest in variant[1]:
        validate(manifest, kube_version)


def test_validation_rejects_a_misspelt_field(default: list[Manifest]) -> None:
    deployment = copy.deepcopy(one(default, "Deployment", "svc-dispatcher"))
    deployment["spec"]["template"]["spec"]["containers"][0]["livenessprobe"] = {}
    with pytest.raises(jsonschema.ValidationError):
        validate(deployment, KUBE_VERSIONS[0])
    monitor = copy.deepcopy(one(render(production_values()), "ServiceMonitor"))
    monitor["spec"]["endpoints"][0]["intervall"] = "30s"
    with pytest.raises(jsonschema.ValidationError):
        validate(monitor, KUBE_VERSIONS[0])


def pod(manifests: list[Manifest], role: str) -> dict[str, Any]:
    spec: dict[str, Any] = one(manifests, "Deployment", f"svc-{role}")["spec"]["template"]["spec"]
    return spec


def environment(manifests: list[Manifest], role: str) -> dict[str, str]:
    """What the role's container sees: ConfigMap, the chart's Secrets (an existing Secret is not
    rendered, so what it holds stays at its default here), then its own env."""
    return container_environment(manifests, pod(manifests, role)["containers"][0])


def container_environment(manifests: list[Manifest], container: dict[str, Any]) -> dict[str, str]:
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            env |= one(manifests, "ConfigMap", source["configMapRef"]["name"])["data"]
        for secret in of_kind(manifests, "Secret"):
            if secret["metadata"]["name"] == source.get("secretRef", {}).get("name"):
                env |= secret["stringData"]
    for item in container["env"]:
        if "value" in item:
            env[item["name"]] = item["value"]
            continue
        ref = item["valueFrom"]["secretKeyRef"]
        for secret in of_kind(manifests, "Secret"):
            if secret["metadata"]["name"] == ref["name"]:
                env[item["name"]] = secret["stringData"][ref["key"]]
    return env


def job(manifests: list[Manifest]) -> Manifest:
    return one(manifests, "Job", "svc-migrate")


def job_container(manifests: list[Manifest]) -> dict[str, Any]:
    container: dict[str, Any] = job(manifests)["spec"]["template"]["spec"]["containers"][0]
    return container


def secret_refs(container: dict[str, Any]) -> dict[str, dict[str, str]]:
    """``{variable: {"name": secret, "key": key}}`` of every secretKeyRef of ``container``."""
    return {
        item["name"]: item["valueFrom"]["secretKeyRef"]
        for item in container["env"]
        if "secretKeyRef" in item.get("valueFrom", {})
    }


def every_container(manifests: list[Manifest]) -> dict[str, dict[str, Any]]:
    """The container of each role's Deployment and of the migration Job, by name."""
    found = {role: pod(manifests, role)["containers"][0] for role in ROLES}
    return found | {"migrate": job_container(manifests)}


def test_default_install_objects(default: list[Manifest]) -> None:
    kinds = sorted(m["kind"] for m in default)
    assert kinds.count("Deployment") == 3 and kinds.count("PodDisruptionBudget") == 3
    assert kinds.count("Job") == 1, "the migration hook"
    assert {s["metadata"]["name"] for s in of_kind(default, "Secret")} == {
        "svc-secrets",
        "svc-database",
        "svc-secret-key",
    }
    assert one(default, "HorizontalPodAutoscaler")["spec"]["scaleTargetRef"]["name"] == (
        "svc-dispatcher"
    )
    for kind in ("Ingress", "ScaledObject", "ServiceMonitor", "PrometheusRule"):
        assert of_kind(default, kind) == [], f"{kind} is optional and off by default"
    assert "replicas" not in one(default, "Deployment", "svc-dispatcher")["spec"], (
        "the HPA owns the dispatcher replica count"
    )


@pytest.mark.parametrize("role", ROLES)
def test_pods_run_their_role_with_probes_and_a_locked_down_container(
    variant: tuple[str, list[Manifest]], role: str
) -> None:
    spec = pod(variant[1], role)
    container = spec["containers"][0]
    assert container["args"] == [role]
    assert container["livenessProbe"]["httpGet"] == {"path": "/health", "port": "ops"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/ready", "port": "ops"}
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert set(ports) == ({"http", "ops"} if role == "api" else {"ops"}), (
        "only the API has a public port"
    )
    env = environment(variant[1], role)
    assert env["SVC_OPS_PORT"] == str(ports["ops"])
    assert env["SVC_HTTP_HOST"] == "0.0.0.0"
    if role == "api":
        assert env["SVC_HTTP_PORT"] == str(ports["http"]) != env["SVC_OPS_PORT"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert container["resources"]["requests"]["cpu"]
    assert {"mountPath": "/tmp", "name": "tmp"} in container["volumeMounts"]


@pytest.mark.parametrize("role", ROLES)
def test_settings_load_and_termination_grace_covers_the_drain(
    variant: tuple[str, list[Manifest]], role: str
) -> None:
    manifests = variant[1]
    settings = load_settings(environment(manifests, role))
    spec = pod(manifests, role)
    pre_stop = spec["containers"][0].get("lifecycle", {}).get("preStop", {})
    sleep = float(pre_stop["exec"]["command"][1]) if pre_stop else 0.0
    assert spec["terminationGracePeriodSeconds"] > settings.shutdown_grace + sleep
    if role == "dispatcher":
        assert settings.shutdown_grace > settings.delivery_timeout, (
            "a delivery in flight must be able to finish within the drain"
        )


def test_every_setting_is_configurable_through_values() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    set_by_chart = SET_BY_CHART
    fields = set(Settings.__dataclass_fields__)
    assert set_by_chart <= fields
    missing = fields - set_by_chart - set(values["config"])
    assert not missing, f"add {sorted(missing)} to config: in helm/svc/values.yaml"
    assert not set(values["config"]) - fields, "config: names a setting svc does not have"
    defaults = Settings()
    for key, value in values["config"].items():
        if isinstance(getattr(defaults, key), float):
            assert parse_duration(str(value)) / 1000 == getattr(defaults, key), key


def test_production_uses_the_existing_secret_keda_ingress_and_monitoring(
    production: list[Manifest],
) -> None:
    assert of_kind(production, "Secret") == []
    assert of_kind(production, "HorizontalPodAutoscaler") == [], "KEDA runs its own HPA"
    for role in ROLES:
        sources = pod(production, role)["containers"][0]["envFrom"]
        assert {"secretRef": {"name": "svc-connections"}} in sources
    for name, container in every_container(production).items():
        refs = secret_refs(container)
        assert refs["SVC_DATABASE_URL"] == {"name": "svc-postgresql", "key": "url"}, name
        assert refs["SVC_SECRET_KEY"] == {"name": "svc-encryption-key", "key": "secret-key"}, name
    scaled = one(production, "ScaledObject")
    triggers = scaled["spec"]["triggers"]
    assert {t["type"] for t in triggers} == {"rabbitmq"}
    # Dispatchers drain new events (fanout) and jobs (deliveries). SVC_NAMESPACE=payments.
    assert [t["metadata"]["queueName"] for t in triggers] == [
        "payments.fanout",
        "payments.deliveries",
    ]
    trigger = triggers[0]
    auth = one(production, "TriggerAuthentication", trigger["authenticationRef"]["name"])
    assert auth["spec"]["secretTargetRef"] == [
        {"parameter": "host", "name": "svc-connections", "key": "KEDA_AMQP_URL"}
    ], "SVC_AMQP_URL names several nodes there; KEDA takes one URL"
    ingress = one(production, "Ingress")
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": "svc-api", "port": {"name": "http"}}
    monitor = one(production, "ServiceMonitor")
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"
    assert monitor["spec"]["endpoints"][0]["port"] == "ops"
    services = [
        s
        for s in of_kind(production, "Service")
        if [p["name"] for p in s["spec"]["ports"]] == ["ops"]
    ]
    selector = monitor["spec"]["selector"]["matchLabels"]
    scraped = [s for s in services if selector.items() <= s["metadata"]["labels"].items()]
    assert {s["metadata"]["labels"]["app.kubernetes.io/component"] for s in scraped} == set(ROLES)
    assert all(s["spec"]["clusterIP"] == "None" for s in scraped), "reachable in-cluster only"


@pytest.mark.parametrize("service_type", ["ClusterIP", "LoadBalancer"])
def test_ingress_and_the_api_service_route_only_the_public_port(service_type: str) -> None:
    values = production_values()
    values["api"]["service"] = {"type": service_type}
    manifests = render(values)
    api = pod(manifests, "api")["containers"][0]
    ports = {port["name"]: port["containerPort"] for port in api["ports"]}
    routed = set()
    for rule in one(manifests, "Ingress")["spec"]["rules"]:
        for path in rule["http"]["paths"]:
            backend = path["backend"]["service"]
            service = one(manifests, "Service", backend["name"])
            [port] = [p for p in service["spec"]["ports"] if p["name"] == backend["port"]["name"]]
            routed.add(port["targetPort"])
    assert routed == {"http"}
    public = one(manifests, "Service", "svc-api")
    assert public["spec"]["type"] == service_type
    assert [p["targetPort"] for p in public["spec"]["ports"]] == ["http"], (
        "the API's Service (a load balancer, maybe) never exposes /ready or /metrics"
    )
    assert ports["http"] != ports["ops"]


def secret_key_of(manifests: list[Manifest]) -> str:
    key: str = one(manifests, "Secret", "svc-secret-key")["stringData"]["secret-key"]
    return key


def test_the_chart_ships_no_usable_secret_key() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert not values["secretKey"]["value"], "no key in the chart's defaults"
    first, second = render(), render()
    for manifests in (first, second):
        SecretBox.parse(secret_key_of(manifests))  # a well-formed key, made for this install
        text = yaml.safe_dump_all(manifests) + notes()
        assert not [key for key in PUBLISHED_KEYS if key in text]
    assert secret_key_of(first) != secret_key_of(second), "generated, not shipped"
    own = "k1:" + "A" * 43
    assert secret_key_of(render({"secretKey": {"value": own}})) == own


@pytest.mark.parametrize("published", PUBLISHED_KEYS)
def test_a_published_key_is_refused_as_the_encrypting_key(published: str) -> None:
    with pytest.raises(render_error(), match="secretKey.value"):
        render({"secretKey": {"value": f"dev:{published}"}})
    # Kept after a new first key, it only decrypts what it encrypted before a rotation.
    rotated = render({"secretKey": {"value": f"k2:{'B' * 43},dev:{published}"}})
    assert secret_key_of(rotated).startswith("k2:")


def test_prometheus_rule_is_the_alert_file_for_this_release(production: list[Manifest]) -> None:
    linked = CHART / "files" / "svc-alerts.yaml"
    assert linked.is_symlink() and linked.resolve() == ALERTS.resolve(), (
        "helm/svc/files/svc-alerts.yaml must link to deploy/prometheus/svc-alerts.yaml"
    )
    rule = one(production, "PrometheusRule")
    assert rule["spec"] == yaml.safe_load(ALERTS.read_text())
    other = one(render(production_values(), release="billing"), "PrometheusRule")
    text = yaml.safe_dump(other["spec"])
    assert "billing-svc-(api|scheduler|dispatcher)" in text
    assert '"svc-(api' not in text


def test_the_smtp_password_comes_from_its_secret_only() -> None:
    values = production_values()
    values["config"] |= {"smtp_host": "smtp.example", "smtp_user": "svc"}
    assert "SVC_SMTP_PASSWORD" not in str(render(values))
    values["smtpPassword"] = {"existingSecret": "mail", "existingSecretKey": "pw"}
    manifests = render(values)
    for role in ROLES:
        env = {item["name"]: item for item in pod(manifests, role)["containers"][0]["env"]}
        assert env["SVC_SMTP_PASSWORD"]["valueFrom"] == {
            "secretKeyRef": {"name": "mail", "key": "pw"}
        }
        assert environment(manifests, role)["SVC_SMTP_HOST"] == "smtp.example"


def test_the_egress_proxy_comes_from_config_or_its_secret() -> None:
    values = production_values()
    values["config"] |= {"egress_proxy": "http://egress:3128", "egress_no_proxy": ".internal"}
    manifests = render(values)
    for role in ROLES:
        assert environment(manifests, role)["SVC_EGRESS_PROXY"] == "http://egress:3128"
        assert environment(manifests, role)["SVC_EGRESS_NO_PROXY"] == ".internal"
    values["egressProxy"] = {"existingSecret": "egress", "existingSecretKey": "url"}
    manifests = render(values)
    for role in ROLES:
        env = {item["name"]: item for item in pod(manifests, role)["containers"][0]["env"]}
        assert env["SVC_EGRESS_PROXY"]["valueFrom"] == {
            "secretKeyRef": {"name": "egress", "key": "url"}
        }
