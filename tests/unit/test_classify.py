"""Outcome classification of delivery attempts."""

from __future__ import annotations

import ssl

import aiohttp
import pytest
from aiohttp.client_reqrep import ConnectionKey

from dispatcher.classify import (
    BlockedTarget,
    outcome_of_error,
    outcome_of_status,
    status_class,
)
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
