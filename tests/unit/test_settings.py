"""Defaults that follow other settings (the checkout base URL follows the API's own port), the
defaults of the waits on other services, and the README's table of every setting."""

from __future__ import annotations

import re
from pathlib import Path

from svc.settings import Settings


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


def test_every_setting_is_in_the_readmes_configuration_table() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    named = {name for row in rows for name in re.findall(r"`(SVC_[A-Z_]+)`", row.split(" | ")[0])}
    missing = {f"SVC_{name.upper()}" for name in Settings.__dataclass_fields__} - named
    assert not missing, f"README.md, Configuration: no row for {sorted(missing)}"


def test_publishing_and_database_waits_are_bounded_by_default() -> None:
    settings = Settings()
    assert settings.publish_timeout == 0.5, "what a blocked broker may add to a payment"
    assert settings.batch_publish_timeout == 5.0
    assert Settings.from_env({"SVC_PUBLISH_TIMEOUT": "250ms"}).publish_timeout == 0.25
