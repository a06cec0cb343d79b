"""The chart's database side: the migration hook Job, and the database URL and secret key
reaching every container from Secrets (the chart's own or existing ones)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from svc.crypto import SecretBox
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
from tests.deploy.test_helm_chart import (
    EXISTING,
    FROM_SECRET_REFS,
    ROLES,
    container_environment,
    every_container,
    job,
    job_container,
    pod,
    secret_refs,
    variant,
)
from tests.deploy.tools import CHART


@pytest.fixture(scope="module")
def default() -> list[Manifest]:
    return render()


__all__ = ["variant"]  # the fixture of both variants, shared with the chart's other tests


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
    keys = set()
    for name, container in every_container(default).items():
        env = container_environment(default, container)
        assert env["SVC_DATABASE_URL"] == values["database"]["url"], name
        keys.add(env["SVC_SECRET_KEY"])
    [key] = keys  # one key for every role: the one the install made
    SecretBox.parse(key)


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


def test_missing_database_url_fails_the_render() -> None:
    """A missing key is made instead (tests/deploy/test_helm_chart.py)."""
    with pytest.raises(render_error(), match="database.url or database.existingSecret"):
        render({"database": {"url": ""}})


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


def test_notes_mention_the_migration_hook_and_where_a_chart_made_key_is_kept() -> None:
    text = notes()
    assert "svc-migrate" in text and "svc migrate" in text
    assert "made on the first install" in text and "copy outside the cluster" in text
    assert "get secret svc-secret-key" in text
    production = notes(production_values())
    assert "svc-migrate" in production
    assert "svc-secret-key" not in production, "an existing Secret is the operator's own"
    assert "svc migrate" in notes({"migration": {"enabled": False}})
