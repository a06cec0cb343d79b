"""When the session cookie may go without ``Secure``: only with the setting off, over plain
http, to this machine."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import make_mocked_request

from api.dashboard.sessions import cookie_secure
from svc.settings import Settings

LOCAL = ["localhost", "localhost:8080", "127.0.0.1:8080", "[::1]:8080", "app.localhost"]
REMOTE = ["pay.example.com", "10.0.0.5:8080", "192.168.1.20", "localhost.example.com"]


@pytest.mark.parametrize("host", LOCAL)
def test_plain_http_to_this_machine_may_go_without_secure(host: str) -> None:
    request = make_mocked_request("GET", "/dashboard/login", headers={"Host": host})
    assert cookie_secure(request, secure_setting=False) is False
    assert cookie_secure(request, secure_setting=True) is True
    assert cookie_secure(request.clone(scheme="https"), secure_setting=False) is True


@pytest.mark.parametrize("host", REMOTE)
def test_any_other_host_gets_secure_whatever_the_setting(host: str) -> None:
    request = make_mocked_request("GET", "/dashboard/login", headers={"Host": host})
    assert cookie_secure(request, secure_setting=False) is True
    assert cookie_secure(request, secure_setting=True) is True


def test_the_settings_are_read_from_the_environment() -> None:
    assert Settings().dashboard_secure_cookies is True
    env = {"SVC_DASHBOARD_SECURE_COOKIES": "false", "SVC_DASHBOARD_SESSION_TTL": "30m"}
    settings = Settings.from_env(env)
    assert settings.dashboard_secure_cookies is False
    assert settings.dashboard_session_ttl == 1800
