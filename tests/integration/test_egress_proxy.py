"""Deliveries through an egress proxy (SVC_EGRESS_PROXY), against a real one: Debian's
tinyproxy, started here on a free port and connecting out from 127.0.0.2, so a receiver
tells a delivery that came through it (peer 127.0.0.2) from a direct one (127.0.0.1). A
proxy that refuses is a proxy_error in the delivery log, retried; a host on
SVC_EGRESS_NO_PROXY goes direct; the proxy's credentials reach it; https goes by CONNECT to
the checked address with the target's name in TLS."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import trustme
from aiohttp import web

from harness.ports import free_port, wait_port
from harness.receivers import serve_locally
from svc.context import Context
from svc.events.flow import emit
from svc.settings import Settings
from tests.conftest import Api

TINYPROXY = shutil.which("tinyproxy") or "/usr/bin/tinyproxy"
PAID = "payment.succeeded"
USER, PASSWORD = "svc", "s3cret"


def tinyproxy(folder: Path, port: int, auth: bool) -> subprocess.Popen[bytes]:
    if not Path(TINYPROXY).exists():
        pytest.fail("tinyproxy is missing: apt-get install tinyproxy (make test does)")
    config = folder / "tinyproxy.conf"
    lines = [
        f"Port {port}",
        "Listen 127.0.0.1",
        "Bind 127.0.0.2",  # its outgoing address: how a receiver knows it came through here
        "Timeout 10",
        "MaxClients 100",
        "Allow 127.0.0.1",
        "DisableViaHeader Yes",
        "LogLevel Connect",
        f'LogFile "{folder}/tinyproxy.log"',
        f'PidFile "{folder}/tinyproxy.pid"',
    ]
    if auth:
        lines.append(f"BasicAuth {USER} {PASSWORD}")
    config.write_text("\n".join(lines) + "\n")
    return subprocess.Popen([TINYPROXY, "-d", "-c", str(config)], stderr=subprocess.DEVNULL)


@pytest.fixture
def proxy_port() -> int:
    return free_port()


@pytest.fixture
def no_proxy() -> str:
    return "localhost,example.org"


@pytest.fixture
def settings(settings: Settings, proxy_port: int, no_proxy: str) -> Settings:
    return replace(
        settings,
        egress_proxy=f"http://{USER}:{PASSWORD}@127.0.0.1:{proxy_port}",
        egress_no_proxy=no_proxy,
        retry_ladder=settings.retry_ladder.parse("1s,1s,1s"),
    )


@pytest.fixture
async def proxy(tmp_path: Path, proxy_port: int) -> AsyncIterator[Path]:
    """tinyproxy with Basic authentication on ``proxy_port``; yields its log's path."""
    process = tinyproxy(tmp_path, proxy_port, auth=True)
    try:
        await wait_port(proxy_port, 10)
        yield tmp_path / "tinyproxy.log"
    finally:
        process.terminate()
        process.wait(5)


class Peers:
    """A receiver that answers 204 and notes each request's peer address and headers."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        self.port = 0

    async def handle(self, request: web.Request) -> web.Response:
        await request.read()
        self.seen.append((request.path, request.remote or "", dict(request.headers)))
        return web.Response(status=204)

    async def wait(self, count: int) -> None:
        for _ in range(200):
            if len(self.seen) >= count:
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"{len(self.seen)} of {count} requests arrived")


@pytest.fixture
async def peers() -> AsyncIterator[Peers]:
    found = Peers()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", found.handle)
    runner, found.port = await serve_locally(app, 0)
    try:
        yield found
    finally:
        await runner.cleanup()


async def _scope(api: Api, ctx: Context) -> tuple[str, str]:
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    return scope.org, scope.env


@pytest.mark.servers
async def test_deliveries_go_through_the_proxy_unless_no_proxy_names_the_host(
    api: Api, ctx: Context, proxy: Path, peers: Peers
) -> None:
    await api.endpoint(f"http://127.0.0.1:{peers.port}/proxied", [PAID])
    await api.endpoint(f"http://localhost:{peers.port}/direct", [PAID])
    org, env = await _scope(api, ctx)
    event = await emit(ctx, org, env, PAID, {"id": "pay_1", "amount": 100})
    await peers.wait(2)
    by_path = {path: (peer, headers) for path, peer, headers in peers.seen}
    peer, headers = by_path["/proxied"]
    assert peer == "127.0.0.2"  # came through the proxy
    assert headers["Host"] == f"127.0.0.1:{peers.port}"
    assert headers["Svc-Event-Id"] == event.id and "Proxy-Authorization" not in headers
    assert by_path["/direct"][0] == "127.0.0.1"  # no_proxy: straight from the dispatcher


@pytest.mark.servers
async def test_a_proxy_that_refuses_is_a_proxy_error_retried(
    api: Api, ctx: Context, peers: Peers, proxy_port: int, tmp_path: Path
) -> None:
    endpoint = await api.endpoint(f"http://127.0.0.1:{peers.port}/later", [PAID])
    org, env = await _scope(api, ctx)
    await emit(ctx, org, env, PAID, {"id": "pay_2", "amount": 100})
    log: list[dict[str, Any]] = []
    for _ in range(100):  # nothing listens on the proxy's port yet
        _, page = await api.call("GET", f"/v1/webhook_endpoints/{endpoint['id']}/deliveries")
        log = page["data"]
        if log:
            break
        await asyncio.sleep(0.1)
    assert log, "no attempt was logged"
    first = log[-1]
    assert first["outcome"] == "proxy_error", first
    assert first["error"] == f"connection refused by the proxy 127.0.0.1:{proxy_port}"
    assert first["next_attempt_at"] is not None  # on the ladder like any failure
    process = tinyproxy(tmp_path, proxy_port, auth=True)
    try:
        await wait_port(proxy_port, 10)
        await peers.wait(1)  # the retry went through once the proxy answered
        assert peers.seen[0][1] == "127.0.0.2"
    finally:
        process.terminate()
        process.wait(5)


def test_a_bad_proxy_setting_refuses_to_start() -> None:
    from svc.settings import SettingsError

    for bad in ("socks5://127.0.0.1:1080", "127.0.0.1:3128", "http://", "http://h:99999"):
        with pytest.raises(SettingsError, match="SVC_EGRESS_PROXY"):
            Settings.from_env({"SVC_EGRESS_PROXY": bad})


@pytest.mark.servers
@pytest.mark.parametrize("no_proxy", ["example.org"])
async def test_https_goes_by_connect_to_the_checked_address_with_the_targets_name(
    api: Api, ctx: Context, proxy: Path
) -> None:
    """The proxy is asked to CONNECT to the address the dispatcher checked, and TLS inside it
    names the target's host (SNI) and checks its certificate for that name: here the
    certificate's CA is not one the dispatcher trusts, so the attempt is a TLS failure after
    the receiver saw the name."""
    authority = trustme.CA()
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("localhost").configure_cert(server)
    names: list[str | None] = []
    server.sni_callback = lambda _sock, name, _ctx: names.append(name)  # type: ignore[assignment,misc,return-value]

    async def answer(_request: web.Request) -> web.Response:
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/{tail:.*}", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port, ssl_context=server).start()
    try:
        endpoint = await api.endpoint(f"https://localhost:{port}/tls", [PAID])
        org, env = await _scope(api, ctx)
        await emit(ctx, org, env, PAID, {"id": "pay_3", "amount": 100})
        log: list[dict[str, Any]] = []
        for _ in range(100):
            _, page = await api.call("GET", f"/v1/webhook_endpoints/{endpoint['id']}/deliveries")
            log = page["data"]
            if log:
                break
            await asyncio.sleep(0.1)
        assert log and log[-1]["outcome"] == "tls", log
        assert log[-1]["error"].startswith(f"TLS with localhost:{port} failed")
        assert names and names[0] == "localhost"
        for _ in range(50):  # tinyproxy writes its log a moment after
            if f"CONNECT 127.0.0.1:{port}" in await asyncio.to_thread(proxy.read_text):
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the proxy was not asked to CONNECT to the checked address")
    finally:
        await runner.cleanup()
