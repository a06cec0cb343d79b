"""The Helm chart lints strictly and renders valid manifests that run the service safely."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest
import yaml

from svc.crypto import SecretBox
from svc.durations import parse_duration
from svc.settings import Settings
from tests.deploy.chart import (
    KUBE_VERSIONS,
    Manifest,
    hook_events,
    hook_weight,
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
# Secrets; the HTTP address is fixed by the pod spec).
SET_BY_CHART = {"amqp_url", "redis_url", "database_url", "secret_key", "http_host", "http_port"}
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
    assert container["livenessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/ready", "port": "http"}
    port = container["ports"][0]
    assert port["name"] == "http"
    assert environment(variant[1], role)["SVC_HTTP_PORT"] == str(port["containerPort"])
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
    settings = Settings.from_env(environment(manifests, role))
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
        {"parameter": "host", "name": "svc-connections", "key": "SVC_AMQP_URL"}
    ]
    ingress = one(production, "Ingress")
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": "svc-api", "port": {"name": "http"}}
    monitor = one(production, "ServiceMonitor")
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"
    services = [
        s for s in of_kind(production, "Service") if s["spec"]["ports"][0]["name"] == "http"
    ]
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert len([s for s in services if selector.items() <= s["metadata"]["labels"].items()]) == 3


def test_prometheus_rule_is_the_alert_file_for_this_release(production: list[Manifest]) -> None:
    assert (CHART / "files" / "svc-alerts.yaml").read_bytes() == ALERTS.read_bytes(), (
        "helm/svc/files/svc-alerts.yaml must be a copy of deploy/prometheus/svc-alerts.yaml"
    )
    rule = one(production, "PrometheusRule")
    assert rule["spec"] == yaml.safe_load(ALERTS.read_text())
    other = one(render(production_values(), release="billing"), "PrometheusRule")
    text = yaml.safe_dump(other["spec"])
    assert "billing-svc-(api|scheduler|dispatcher)" in text
    assert '"svc-(api' not in text


def test_migration_job_is_a_pre_install_and_pre_upgrade_hook_running_svc_migrate(
    variant: tuple[str, list[Manifest]],
) -> None:
    manifests = variant[1]
    migration = job(manifests)
    annotations = migration["metadata"]["annotations"]
    assert hook_events(migration) == {"pre-install", "pre-upgrade"}
    assert annotations["helm.sh/hook-weight"].lstrip("-").isdigit(), "a weight orders the hooks"
    policies = {p.strip() for p in annotations["helm.sh/hook-delete-policy"].split(",")}
    assert policies == {"before-hook-creation", "hook-succeeded"}
    spec = migration["spec"]
    assert spec["backoffLimit"] >= 1
    assert spec["activeDeadlineSeconds"] > 0
    template = spec["template"]["spec"]
    assert template["restartPolicy"] in ("Never", "OnFailure")
    container = job_container(manifests)
    assert [*container.get("command", []), *container["args"]] == ["migrate"], (
        "the image's entrypoint is svc, so the Job runs `svc migrate`"
    )
    api = pod(manifests, "api")
    assert container["image"] == api["containers"][0]["image"]
    assert container["resources"]["requests"]["cpu"]
    assert container["resources"]["requests"]["memory"]
    assert container["resources"]["limits"]["memory"]


def test_migration_job_runs_locked_down_like_the_roles(
    variant: tuple[str, list[Manifest]],
) -> None:
    manifests = variant[1]
    template = job(manifests)["spec"]["template"]["spec"]
    container = job_container(manifests)
    api = pod(manifests, "api")
    assert template["securityContext"] == api["securityContext"]
    assert container["securityContext"] == api["containers"][0]["securityContext"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert {"mountPath": "/tmp", "name": "tmp"} in container["volumeMounts"]
    assert template["automountServiceAccountToken"] is False
    assert template.get("imagePullSecrets") == api.get("imagePullSecrets")
    assert template.get("affinity") == api.get("affinity")


def test_migration_job_gets_the_settings_of_the_roles(
    variant: tuple[str, list[Manifest]],
) -> None:
    manifests = variant[1]
    job_env = container_environment(manifests, job_container(manifests))
    config = one(manifests, "ConfigMap", "svc-config")["data"]
    assert {k: job_env[k] for k in config} == config, "the Job sees every config value"
    assert Settings.from_env(job_env).database_pool_size > 0
    for role in ROLES:
        role_refs = secret_refs(pod(manifests, role)["containers"][0])
        assert secret_refs(job_container(manifests)) == role_refs, f"the Secrets of {role}"


def test_migration_job_needs_nothing_that_a_first_install_creates_after_it(
    variant: tuple[str, list[Manifest]],
) -> None:
    """Helm runs pre-install hooks before it creates the release's ordinary resources: every
    object of the chart that the Job reads must itself be an earlier hook."""
    manifests = variant[1]
    migration = job(manifests)
    template = migration["spec"]["template"]["spec"]
    container = job_container(manifests)
    used = [("Secret", ref["name"]) for ref in secret_refs(container).values()]
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            used.append(("ConfigMap", source["configMapRef"]["name"]))
        if "secretRef" in source:
            used.append(("Secret", source["secretRef"]["name"]))
    used.append(("ServiceAccount", template["serviceAccountName"]))
    for kind, name in used:
        for made in of_kind(manifests, kind):
            if made["metadata"]["name"] != name:
                continue
            assert "pre-install" in hook_events(made), f"{kind} {name} does not exist yet"
            assert "pre-upgrade" in hook_events(made), f"{kind} {name} keeps old values"
            assert hook_weight(made) < hook_weight(migration), f"{kind} {name} comes too late"


def test_chart_hook_secrets_outlive_the_hook_phase(default: list[Manifest]) -> None:
    for name in ("svc-database", "svc-secret-key"):
        secret = one(default, "Secret", name)
        policies = secret["metadata"]["annotations"]["helm.sh/hook-delete-policy"]
        assert "hook-succeeded" not in policies, f"{name} is still read by the Deployments"
        assert "before-hook-creation" in policies, f"{name} must take new values on upgrade"


@pytest.mark.parametrize("variable", FROM_SECRET_REFS)
def test_database_url_and_secret_key_reach_every_container_through_secret_key_refs(
    variant: tuple[str, list[Manifest]], variable: str
) -> None:
    manifests = variant[1]
    config = one(manifests, "ConfigMap", "svc-config")["data"]
    assert variable not in config, "credentials never go into the ConfigMap"
    for name, container in every_container(manifests).items():
        entries = [item for item in container["env"] if item["name"] == variable]
        assert len(entries) == 1, f"{name}: {variable}"
        assert "value" not in entries[0], f"{name}: {variable} inline"
        ref = entries[0]["valueFrom"]["secretKeyRef"]
        assert ref["name"] and ref["key"], f"{name}: {variable}"
        assert "optional" not in ref or ref["optional"] is False, f"{name}: {variable}"


def test_chart_made_secrets_hold_the_values_and_a_usable_key(default: list[Manifest]) -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    for name, container in every_container(default).items():
        env = container_environment(default, container)
        assert env["SVC_DATABASE_URL"] == values["database"]["url"], name
        assert env["SVC_SECRET_KEY"] == values["secretKey"]["value"], name
    key = SecretBox.parse(values["secretKey"]["value"])
    assert key.current == "dev", "the published development key says what it is"


@pytest.mark.parametrize("which", ["both", "database", "secretKey"])
def test_existing_secrets_are_honoured(which: str) -> None:
    chosen = EXISTING if which == "both" else {which: EXISTING[which]}
    values: dict[str, Any] = {"secrets": {"existingSecret": "svc-connections"}, **chosen}
    manifests = render(values)
    report = lint(values)
    assert report["errors"] == []
    for manifest in manifests:
        validate(manifest, KUBE_VERSIONS[-1])
    made = {s["metadata"]["name"]: s for s in of_kind(manifests, "Secret")}
    database_url = yaml.safe_load((CHART / "values.yaml").read_text())["database"]["url"]
    assert ("svc-database" in made) is ("database" not in chosen)
    assert ("svc-secret-key" in made) is ("secretKey" not in chosen)
    if "database" in chosen:
        for secret in made.values():
            assert database_url not in secret.get("stringData", {}).values()
            assert "postgresql://" not in yaml.safe_dump(secret), "no Secret holds the URL"
    for name, container in every_container(manifests).items():
        refs = secret_refs(container)
        if "database" in chosen:
            assert refs["SVC_DATABASE_URL"] == {"name": "pg-credentials", "key": "dsn"}, name
        else:
            assert refs["SVC_DATABASE_URL"] == {"name": "svc-database", "key": "url"}, name
        if "secretKey" in chosen:
            assert refs["SVC_SECRET_KEY"] == {"name": "svc-keys", "key": "current"}, name
        else:
            assert refs["SVC_SECRET_KEY"] == {"name": "svc-secret-key", "key": "secret-key"}
    annotations = one(manifests, "Deployment", "svc-api")["spec"]["template"]["metadata"]
    assert ("checksum/hook-secrets" in annotations["annotations"]) is (which != "both")


def test_existing_secret_keys_default_to_url_and_secret_key() -> None:
    values = {
        "database": {"existingSecret": "pg"},
        "secretKey": {"existingSecret": "keys"},
    }
    for name, container in every_container(render(values)).items():
        refs = secret_refs(container)
        assert refs["SVC_DATABASE_URL"] == {"name": "pg", "key": "url"}, name
        assert refs["SVC_SECRET_KEY"] == {"name": "keys", "key": "secret-key"}, name


def test_pods_roll_when_the_database_url_or_the_key_changes(default: list[Manifest]) -> None:
    def checksum(manifests: list[Manifest]) -> str:
        template = one(manifests, "Deployment", "svc-dispatcher")["spec"]["template"]
        value: str = template["metadata"]["annotations"]["checksum/hook-secrets"]
        return value

    before = checksum(default)
    assert checksum(render({"database": {"url": "postgresql://svc@db:5432/other"}})) != before
    assert checksum(render({"secretKey": {"value": "k2:" + "A" * 43}})) != before


def test_missing_database_url_or_key_fails_the_render() -> None:
    with pytest.raises(render_error(), match="database.url or database.existingSecret"):
        render({"database": {"url": ""}})
    with pytest.raises(render_error(), match="secretKey.value or secretKey.existingSecret"):
        render({"secretKey": {"value": ""}})


def test_migration_can_be_turned_off_and_uses_an_account_that_exists_in_time() -> None:
    off = render({"migration": {"enabled": False}})
    assert of_kind(off, "Job") == []
    assert len(of_kind(off, "Deployment")) == 3
    default_job = job(render())["spec"]["template"]["spec"]
    assert default_job["serviceAccountName"] == "default", "the chart's account comes later"
    existing = render({"serviceAccount": {"create": False, "name": "payments"}})
    assert job(existing)["spec"]["template"]["spec"]["serviceAccountName"] == "payments"
    chosen = render({"migration": {"serviceAccountName": "migrator"}})
    assert job(chosen)["spec"]["template"]["spec"]["serviceAccountName"] == "migrator"


def test_notes_mention_the_migration_hook_and_warn_about_an_inline_key() -> None:
    text = notes()
    assert "svc-migrate" in text and "svc migrate" in text
    assert "WARNING" in text and "secretKey.existingSecret" in text
    production = notes(production_values())
    assert "svc-migrate" in production
    assert "WARNING" not in production
    assert "svc migrate" in notes({"migration": {"enabled": False}})
