"""Deployment defaults: what a laptop run exposes, which port answers probes and metrics, and
which dependency versions the package admits."""

from __future__ import annotations

import contextlib
import re
import socket
import tomllib
from dataclasses import replace
from pathlib import Path

import aiohttp
import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from svc.context import Context
from svc.settings import Settings
from tests.conftest import Running

ROOT = Path(__file__).resolve().parents[2]
OPS_PATHS = ("/ready", "/metrics")

# The first release of each past its published advisories: jinja2 3.1.6 (sandbox escapes,
# CVE-2024-56201, CVE-2024-56326, CVE-2025-27516), orjson 3.9.15 (unbounded recursion on
# deeply nested input, CVE-2024-27454), cryptography 44.0.1 (the OpenSSL it bundles,
# CVE-2024-12797; 42.0.x also CVE-2024-26130 and CVE-2024-0727).
FLOORS = {"jinja2": "3.1.6", "orjson": "3.9.15", "cryptography": "44.0.1"}


def laptop_settings() -> Settings:
    """The settings ``make run`` gives ``svc run``: the defaults plus the literal ``SVC_*``
    assignments of its recipe (the ones made of shell expansions are secrets and limits)."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^run:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert recipe is not None, "the Makefile has a run target"
    text = recipe.group(1).replace("\\\n", " ")
    literal = {
        name: value.strip('"')
        for name, value in re.findall(r"\b(SVC_\w+)=(\"[^\"$]*\"|[^\s\"$]+)(?=\s)", text)
    }
    assert literal.get("SVC_ALLOW_PRIVATE_TARGETS") == "true", "the recipe was read"
    return Settings.from_env(literal)


def other_local_addresses() -> set[str]:
    """IPv4 addresses of this machine other than 127.0.0.1: 127.0.0.2 (the rest of the loopback
    network answers locally on Linux) and the host's own interface addresses, each proven local
    by binding to it, so no connection below leaves the machine."""
    candidates = {"127.0.0.2"}
    with contextlib.suppress(OSError):
        for *_, address in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            candidates.add(str(address[0]))
    local = set()
    for address in candidates - {"127.0.0.1"}:
        with socket.socket() as probe, contextlib.suppress(OSError):
            probe.bind((address, 0))
            local.add(address)
    return local


def accepts(address: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((address, port), timeout=2):
        return True
    return False


async def test_make_run_listens_on_loopback_only(settings: Settings, ctx: Context) -> None:
    laptop = laptop_settings()
    assert laptop.allow_private_targets and not laptop.dashboard_secure_cookies
    running = Running(replace(settings, http_host=laptop.http_host))
    await running.start()
    try:
        others = other_local_addresses()
        assert others, "127.0.0.2 at least"
        for name in ("http_port", "ops_port"):
            port = getattr(settings, name)
            assert accepts("127.0.0.1", port)
            reachable = {address for address in others if accepts(address, port)}
            assert not reachable, f"port {port} answers on {sorted(reachable)}"
    finally:
        await running.close()


def test_only_the_container_listens_on_every_interface() -> None:
    assert Settings().http_host == "127.0.0.1"
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    assert re.search(r"SVC_HTTP_HOST=0\.0\.0\.0\b", dockerfile), "the image sets it itself"


async def test_public_port_serves_no_readiness_or_metrics(service: Running) -> None:
    async with aiohttp.ClientSession() as session:
        for path in OPS_PATHS:
            async with session.get(service.base_url + path) as response:
                assert response.status == 404, path
        async with session.get(service.base_url + "/health") as response:
            assert response.status == 200, "liveness stays public, as the API reference says"
        async with session.get(service.ops_url + "/ready") as response:
            assert response.status == 200
            assert (await response.json())["ready"] is True
        async with session.get(service.ops_url + "/metrics") as response:
            assert response.status == 200
            assert "svc_http_request_duration_seconds" in await response.text()
        async with session.get(service.ops_url + "/health") as response:
            assert response.status == 200


@pytest.mark.roles("dispatcher")
async def test_other_roles_serve_only_the_ops_port(service: Running) -> None:
    assert not accepts("127.0.0.1", service.settings.http_port)
    async with aiohttp.ClientSession() as session:
        for path in ("/health", *OPS_PATHS):
            async with session.get(service.ops_url + path) as response:
                assert response.status == 200, path


def test_ops_port_must_differ_from_the_public_port() -> None:
    from svc.settings import SettingsError

    with pytest.raises(SettingsError, match="SVC_OPS_PORT"):
        Settings.from_env({"SVC_HTTP_PORT": "9000", "SVC_OPS_PORT": "9000"})


def test_dependency_floors_are_past_published_advisories() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    floors: dict[str, Version] = {}
    for line in project["dependencies"]:
        requirement = Requirement(line)
        for spec in requirement.specifier:
            if spec.operator == ">=":
                floors[requirement.name.lower()] = Version(spec.version)
    for name, wanted in FLOORS.items():
        assert name in floors, f"{name} has no floor"
        assert floors[name] >= Version(wanted), f"{name}>={floors[name]} admits vulnerable releases"
