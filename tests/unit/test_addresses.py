"""Which delivery targets count as public, and which hosts are refused whatever DNS says."""

from __future__ import annotations

import pytest

from svc.addresses import always_blocked, is_public


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "0.0.0.0",
        "100.64.0.1",
        "224.0.0.1",
        "255.255.255.255",
        "::1",
        "fe80::1",
        "fc00::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "240.0.0.1",
        "not-an-ip",
    ],
)
def test_non_public(address: str) -> None:
    assert not is_public(address)


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"]
)
def test_public(address: str) -> None:
    assert is_public(address)


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "10.0.0.7",
        "192.168.1.1",
        "169.254.169.254",
        "0.0.0.0",
        "[::1]",
        "::1",
        "fe80::1%eth0",
        "::ffff:127.0.0.1",
        "localhost",
        "LocalHost.",
        "api.localhost",
        "127.1",
        "2130706433",
        "0x7f000001",
        "0177.0.0.1",
        "0x7f.1",
        "017700000001",
    ],
)
def test_always_blocked(host: str) -> None:
    assert always_blocked(host)


@pytest.mark.parametrize(
    "host",
    [
        "8.8.8.8",
        "[2606:4700:4700::1111]",
        "shop.example",
        "localhost.example.com",
        "mylocalhost",
        "134744072",
        "a.b",
    ],
)
def test_public_or_resolved_later(host: str) -> None:
    assert not always_blocked(host)
