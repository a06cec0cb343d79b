"""Outcome classification of delivery attempts."""

from __future__ import annotations

import errno
import ssl

import aiohttp
import pytest
from aiohttp.client_reqrep import ConnectionKey

from dispatcher.classify import (
    BlockedTarget,
    describe,
    outcome_of_error,
    outcome_of_status,
    status_class,
)
from dispatcher.egress import NoProxy
from dispatcher.errors import BlockedAddress

KEY = ConnectionKey("example.com", 443, True, True, None, None, None)


@pytest.mark.parametrize(
    ("status", "outcome", "klass"),
    [
        (200, "success", "2xx"),
        (204, "success", "2xx"),
        (299, "success", "2xx"),
        (301, "http_error", "3xx"),
        (302, "http_error", "3xx"),
        (404, "http_error", "4xx"),
        (410, "http_error", "4xx"),
        (500, "http_error", "5xx"),
        (503, "http_error", "5xx"),
    ],
)
def test_status(status: int, outcome: str, klass: str) -> None:
    assert outcome_of_status(status) == outcome
    assert status_class(status) == klass


def test_no_response_has_status_class_none() -> None:
    assert status_class(None) == "none"


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (TimeoutError(), "timeout"),
        (TimeoutError(), "timeout"),
        (aiohttp.ServerTimeoutError(), "timeout"),
        (BlockedTarget("127.0.0.1"), "blocked"),
        (aiohttp.ClientConnectorDNSError(KEY, BlockedAddress("private")), "blocked"),
        (aiohttp.ClientConnectorDNSError(KEY, OSError("no such host")), "dns"),
        (aiohttp.ClientConnectorCertificateError(KEY, ssl.SSLCertVerificationError()), "tls"),
        (aiohttp.ClientConnectorSSLError(KEY, ssl.SSLError()), "tls"),
        (aiohttp.ClientConnectorError(KEY, ConnectionRefusedError()), "connect"),
        (aiohttp.ServerDisconnectedError(), "connect"),
        (ConnectionResetError(), "connect"),
        (ValueError("odd"), "error"),
    ],
)
def test_errors(error: Exception, outcome: str) -> None:
    assert outcome_of_error(error) == outcome


def test_no_proxy_names_hosts_suffixes_addresses_and_ranges() -> None:
    rules = NoProxy(" internal.example, .corp , 10.0.0.0/8, 192.168.1.5 ,")
    assert rules.matches("internal.example") and rules.matches("api.internal.example")
    assert rules.matches("corp") and rules.matches("a.b.corp") and rules.matches("A.CORP.")
    assert not rules.matches("notinternal.example") and not rules.matches("corp.example")
    assert rules.matches("10.2.3.4") and rules.matches("192.168.1.5")
    assert not rules.matches("192.168.1.6") and not rules.matches("11.0.0.1")
    assert NoProxy("*").matches("anything.example")
    assert not NoProxy("").matches("example.com")


def test_a_proxy_failure_says_which_proxy_and_what_it_answered() -> None:
    key = ConnectionKey("10.0.3.7", 3128, False, True, None, None, None)
    refused = aiohttp.ClientProxyConnectionError(
        key, ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
    )
    assert outcome_of_error(refused) == "proxy_error"
    text = describe(refused, "proxy_error", "hooks.bank.example", 443, 10)
    assert text == "connection refused by the proxy 10.0.3.7:3128"
    answered = aiohttp.ClientHttpProxyError(None, (), status=403, message="Forbidden")  # type: ignore[arg-type]
    assert outcome_of_error(answered) == "proxy_error"
    text = describe(answered, "proxy_error", "hooks.bank.example", 443, 10)
    assert text == "the proxy answered CONNECT to hooks.bank.example:443 with 403 Forbidden"
