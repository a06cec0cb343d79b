"""Defaults that follow other settings (the checkout base URL follows the API's own port), the
defaults of the waits on other services, and the configuration page's table of every setting
the code reads, and the ranges of the limits."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from svc.crypto import new_key_text
from svc.settings import Settings, SettingsError

ROOT = Path(__file__).resolve().parents[2]
CONFIGURATION = ROOT / "docs" / "operating" / "configuration.md"


def test_checkout_base_url_defaults_to_the_apis_own_port() -> None:
    settings = Settings.from_env({"SVC_HTTP_PORT": "9123"}).resolved()
    assert settings.checkout_base_url == "http://127.0.0.1:9123/checkout"
    assert Settings().resolved().checkout_base_url == "http://127.0.0.1:8080/checkout"


def test_an_empty_checkout_base_url_means_the_default() -> None:
    env = {"SVC_HTTP_PORT": "9123", "SVC_CHECKOUT_BASE_URL": ""}
    assert Settings.from_env(env).resolved().checkout_base_url == "http://127.0.0.1:9123/checkout"


def test_an_explicit_checkout_base_url_wins() -> None:
    env = {"SVC_HTTP_PORT": "9123", "SVC_CHECKOUT_BASE_URL": "https://pay.example/checkout"}
    settings = Settings.from_env(env).resolved()
    assert settings.checkout_base_url == "https://pay.example/checkout"
    assert settings.resolved() is settings


def test_the_dashboard_url_defaults_to_this_apis_own() -> None:
    settings = Settings.from_env({"SVC_HTTP_PORT": "9123"}).resolved()
    assert settings.dashboard_url == "http://127.0.0.1:9123/dashboard"
    explicit = Settings.from_env({"SVC_DASHBOARD_URL": "https://pay.example/dashboard/"})
    assert explicit.resolved().dashboard_url == "https://pay.example/dashboard"


CODE = ("svc", "api", "cli", "dispatcher", "scheduler")
"""The packages whose reading of the environment counts."""
ENV_READS = {"getenv", "get", "pop"}


def read_variables(source: str) -> set[str]:
    """``SVC_`` names that ``source`` reads from the environment (``os.environ[…]``,
    ``os.environ.get(…)``, ``os.getenv(…)``, ``env.get(…)`` of a mapping called env/environ)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        key: ast.expr | None = None
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ENV_READS:
                owner = ast.unparse(func.value)
                if func.attr == "getenv" or owner.split(".")[-1] in ("environ", "env"):
                    key = node.args[0]
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("environ"):
            key = node.slice
        if isinstance(key, ast.Constant) and str(key.value).startswith("SVC_"):
            names.add(str(key.value))
    return names


def code_reads() -> set[str]:
    """Every ``SVC_`` variable the code reads: one per field of ``Settings`` (``from_env``),
    and any read directly."""
    names = {f"SVC_{name.upper()}" for name in Settings.__dataclass_fields__}
    for package in CODE:
        for path in (ROOT / package).rglob("*.py"):
            names |= read_variables(path.read_text())
    return names


def configuration_table() -> set[str]:
    """The ``SVC_`` names of the first column of the configuration page's table."""
    rows = [line for line in CONFIGURATION.read_text().splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`(SVC_[A-Z0-9_]+)`", row.split(" | ")[0])}


def test_every_variable_the_code_reads_is_on_the_configuration_page() -> None:
    missing = code_reads() - configuration_table()
    assert not missing, f"docs/operating/configuration.md: no row for {sorted(missing)}"


def test_the_configuration_page_names_only_variables_the_code_reads() -> None:
    stale = configuration_table() - code_reads()
    assert not stale, f"docs/operating/configuration.md: rows nothing reads: {sorted(stale)}"


def test_direct_reads_of_the_environment_are_found() -> None:
    source = (
        "import os\n"
        "a = os.environ.get('SVC_ONE')\n"
        "b = os.getenv('SVC_TWO', '')\n"
        "c = os.environ['SVC_THREE']\n"
        "d = env.get('SVC_FOUR')\n"
        "e = {'SVC_NOT_READ': 1}.get('x')\n"
    )
    assert read_variables(source) == {"SVC_ONE", "SVC_TWO", "SVC_THREE", "SVC_FOUR"}


def test_publishing_and_database_waits_are_bounded_by_default() -> None:
    settings = Settings()
    assert settings.publish_timeout == 0.5, "what a blocked broker may add to a payment"
    assert settings.batch_publish_timeout == 5.0
    assert Settings.from_env({"SVC_PUBLISH_TIMEOUT": "250ms"}).publish_timeout == 0.25


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("SVC_FAILED_AUTH_LIMIT", "-1", "must not be negative"),
        ("SVC_FAILED_AUTH_WINDOW", "0", "must be positive"),
        ("SVC_TRUSTED_PROXY_HOPS", "-1", "must not be negative"),
        ("SVC_MAX_STREAMS_PER_KEY", "-1", "must not be negative"),
        ("SVC_MAX_ENDPOINTS_PER_SCOPE", "-1", "must not be negative"),
        ("SVC_MAX_RECOVER_EVENTS", "0", "from 1 to 10000"),
        ("SVC_MAX_RECOVER_EVENTS", "10001", "from 1 to 10000"),
    ],
)
def test_limits_out_of_their_range_stop_the_start(variable: str, value: str, says: str) -> None:
    with pytest.raises(SettingsError, match=f"{variable}: {says}"):
        Settings.from_env({"SVC_SECRET_KEY": new_key_text(), variable: value}).validate()
