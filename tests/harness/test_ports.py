"""Free ports and the waits for a port or a URL, which give up at once when what should come
up has ended."""

from __future__ import annotations

import asyncio
import sys

import pytest
from aiohttp import web

from harness.ports import free_port, wait_port, wait_ready, wait_refused
from harness.receivers import serve_locally


def test_free_ports_are_never_handed_out_twice() -> None:
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == 50


async def test_a_wait_fails_at_once_when_the_process_has_exited() -> None:
    process = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
    await process.wait()
    with pytest.raises(RuntimeError, match="exited with 0"):
        await wait_port(free_port(), within=30, watched=process)


async def test_waits_for_a_port_to_accept_then_refuse_and_for_a_url_to_answer() -> None:
    app = web.Application()
    app.router.add_get("/ready", _ok)
    runner, port = await serve_locally(app)
    try:
        await wait_port(port, within=5)
        await wait_ready(f"http://127.0.0.1:{port}/ready", within=5)
    finally:
        await runner.cleanup()
    await wait_refused(port, within=5)


async def _ok(_request: web.Request) -> web.Response:
    return web.Response(text="ok")


def test_each_test_worker_hands_out_ports_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest-xdist's workers walk the ports from random starts: two walks that meet could
    hand one port to two servers started at once. Each worker takes its own stripe."""
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "6")
    seen: dict[int, set[int]] = {}
    for worker in range(6):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{worker}")
        seen[worker] = {free_port() for _ in range(200)}
        assert {port % 6 for port in seen[worker]} == {(10_000 + worker) % 6}
    assert len(set().union(*seen.values())) == 6 * 200
