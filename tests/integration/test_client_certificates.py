"""Client certificates per endpoint (mTLS) against a real TLS receiver on 127.0.0.1 that
requires them (certificates made by trustme): with the endpoint's certificate the delivery
arrives and the receiver sees its subject; without one the handshake is refused and logged as
a TLS failure; the receiver's own certificate is trusted through the endpoint's server_ca;
the key is kept encrypted and never shown; bad input is a 422 naming the field."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import trustme
from aiohttp import web

from harness.ports import free_port
from svc.context import Context
from svc.events.flow import emit
from tests.conftest import Api

PAID = "payment.succeeded"


@dataclass
class TlsReceiver:
    """An https receiver for ``localhost`` that requires a client certificate of ``clients``."""

    server_ca: trustme.CA
    clients: trustme.CA
    port: int = 0
    subjects: list[str] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"https://localhost:{self.port}{path}"

    async def handle(self, request: web.Request) -> web.Response:
        await request.read()
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        subject = dict(item[0] for item in (peer or {}).get("subject", ()))
        self.subjects.append(str(subject.get("organizationalUnitName") or subject))
        return web.Response(status=204)


@pytest.fixture
async def tls_receiver() -> AsyncIterator[TlsReceiver]:
    found = TlsReceiver(trustme.CA(), trustme.CA())
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    found.server_ca.issue_cert("localhost").configure_cert(context)
    found.clients.configure_trust(context)
    context.verify_mode = ssl.CERT_REQUIRED
    app = web.Application()
    app.router.add_post("/{tail:.*}", found.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    found.port = free_port()
    await web.TCPSite(runner, "127.0.0.1", found.port, ssl_context=context).start()
    try:
        yield found
    finally:
        await runner.cleanup()


def _pem(blob: Any) -> str:
    return str(blob.bytes().decode())


def _client(receiver: TlsReceiver, unit: str = "bakery") -> tuple[str, str]:
    issued = receiver.clients.issue_cert("client.example", organization_unit_name=unit)
    chain = "".join(_pem(p) for p in issued.cert_chain_pems)
    return chain, _pem(issued.private_key_pem)


async def _log(api: Api, endpoint_id: str) -> list[dict[str, Any]]:
    for _ in range(100):
        _, page = await api.call("GET", f"/v1/webhook_endpoints/{endpoint_id}/deliveries")
        if page["data"]:
            return list(page["data"])
        await asyncio.sleep(0.1)
    raise AssertionError("no attempt was logged")


async def _emit(api: Api, ctx: Context) -> None:
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    await emit(ctx, scope.org, scope.env, PAID, {"id": "pay_1", "amount": 100})


async def test_the_endpoints_certificate_is_presented_and_its_ca_trusted(
    api: Api, ctx: Context, tls_receiver: TlsReceiver
) -> None:
    certificate, key = _client(tls_receiver)
    server_ca = _pem(tls_receiver.server_ca.cert_pem)
    status, endpoint = await api.call(
        "POST",
        "/v1/webhook_endpoints",
        json={
            "url": tls_receiver.url("/mtls"),
            "events": [PAID],
            "client_certificate": certificate,
            "client_key": key,
            "server_ca": server_ca,
        },
    )
    assert status == 201, endpoint
    assert "client_key" not in endpoint and endpoint["client_key_set"] is True
    assert endpoint["client_certificate"] == certificate and endpoint["server_ca"] == server_ca
    stored = await ctx.db.fetchval(
        "SELECT client_key FROM webhook_endpoints WHERE id = $1", endpoint["id"]
    )
    assert b"PRIVATE KEY" not in bytes(stored)  # sealed at rest
    await _emit(api, ctx)
    log = await _log(api, endpoint["id"])
    assert log[0]["outcome"] == "success", log
    assert tls_receiver.subjects == ["bakery"]


async def test_without_a_certificate_the_handshake_is_a_tls_failure(
    api: Api, ctx: Context, tls_receiver: TlsReceiver
) -> None:
    server_ca = _pem(tls_receiver.server_ca.cert_pem)
    status, endpoint = await api.call(
        "POST",
        "/v1/webhook_endpoints",
        json={"url": tls_receiver.url("/bare"), "events": [PAID], "server_ca": server_ca},
    )
    assert status == 201, endpoint
    assert endpoint["client_key_set"] is False and endpoint["client_certificate"] is None
    await _emit(api, ctx)
    log = await _log(api, endpoint["id"])
    assert log[0]["outcome"] in ("tls", "connect"), log
    assert tls_receiver.subjects == []


async def test_without_server_ca_the_receivers_certificate_is_not_trusted(
    api: Api, ctx: Context, tls_receiver: TlsReceiver
) -> None:
    certificate, key = _client(tls_receiver)
    status, endpoint = await api.call(
        "POST",
        "/v1/webhook_endpoints",
        json={
            "url": tls_receiver.url("/untrusted"),
            "events": [PAID],
            "client_certificate": certificate,
            "client_key": key,
        },
    )
    assert status == 201, endpoint
    await _emit(api, ctx)
    log = await _log(api, endpoint["id"])
    assert log[0]["outcome"] == "tls" and "certificate" in log[0]["error"], log


async def test_bad_certificates_and_keys_are_a_422_naming_the_field(
    api: Api, tls_receiver: TlsReceiver
) -> None:
    certificate, key = _client(tls_receiver)
    _, other_key = _client(tls_receiver, "other")
    encrypted = trustme.CA().issue_cert("x.example")  # its key, encrypted below
    from cryptography.hazmat.primitives import serialization

    loaded = serialization.load_pem_private_key(encrypted.private_key_pem.bytes(), None)
    locked = loaded.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"pw"),
    ).decode()
    url = tls_receiver.url("/bad")
    cases = [
        ({"client_certificate": certificate}, "client_key", "required"),
        ({"client_key": key}, "client_certificate", "required"),
        (
            {"client_certificate": "not a pem", "client_key": key},
            "client_certificate",
            "invalid_certificate",
        ),
        ({"client_certificate": certificate, "client_key": "junk"}, "client_key", "invalid_key"),
        ({"client_certificate": certificate, "client_key": locked}, "client_key", "invalid_key"),
        (
            {"client_certificate": certificate, "client_key": other_key},
            "client_key",
            "key_mismatch",
        ),
        (
            {"server_ca": "-----BEGIN CERTIFICATE-----\nxx\n-----END CERTIFICATE-----\n"},
            "server_ca",
            "invalid_certificate",
        ),
        ({"client_certificate": 5, "client_key": key}, "client_certificate", "invalid_type"),
    ]
    for extra, named, code in cases:
        status, problem = await api.call(
            "POST", "/v1/webhook_endpoints", json={"url": url, "events": [PAID], **extra}
        )
        assert status == 422, (extra, problem)
        assert (named, code) in {(e["field"], e["code"]) for e in problem["errors"]}, problem
    status, problem = await api.call(
        "POST",
        "/v1/webhook_endpoints",
        json={
            "url": "http://127.0.0.1:9/plain",
            "events": [PAID],
            "client_certificate": certificate,
            "client_key": key,
        },
    )
    assert status == 422
    assert ("url", "https_required") in {(e["field"], e["code"]) for e in problem["errors"]}


async def test_a_patch_sets_and_removes_the_certificate(
    api: Api, ctx: Context, tls_receiver: TlsReceiver
) -> None:
    certificate, key = _client(tls_receiver)
    endpoint = await api.endpoint(tls_receiver.url("/later"), [PAID])
    path = f"/v1/webhook_endpoints/{endpoint['id']}"
    status, changed = await api.call(
        "PATCH", path, json={"client_certificate": certificate, "client_key": key}
    )
    assert status == 200 and changed["client_key_set"] is True, changed
    stored = await ctx.endpoints.load(str(endpoint["id"]))
    assert stored is not None and stored.client_key == key
    status, removed = await api.call("PATCH", path, json={"client_certificate": None})
    assert status == 200 and removed["client_key_set"] is False
    assert removed["client_certificate"] is None
