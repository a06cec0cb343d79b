"""Defaults that follow other settings: the checkout base URL follows the API's own port."""

from __future__ import annotations

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
