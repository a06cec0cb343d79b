"""The benchmarks' nginx receiver writes the log line the benchmarks read back as receipts."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from benchmarks.receipts import AccessLog
from harness.nginx import Receiver


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A directory under /tmp: nginx's workers, no longer root, cannot enter pytest's."""
    path = Path(tempfile.mkdtemp())
    yield path
    shutil.rmtree(path)


async def test_nginx_logs_every_request_and_fails_the_storm_on_demand(workdir: Path) -> None:
    headers = {"Svc-Event-Id": "evt_1", "Svc-Signature": "t=1,v1=abc"}
    async with Receiver(workdir, buffered=False) as receiver:
        async with aiohttp.ClientSession() as session:
            async with session.post(receiver.url("/run1/e"), data=b"{}", headers=headers) as answer:
                assert answer.status == 204
            receiver.fail(True)
            async with session.post(
                receiver.url("/storm/e"), data=b"{}", headers=headers
            ) as answer:
                assert answer.status == 503
    log = AccessLog(receiver.log_path)
    log.poll()
    assert log.all_arrived("run1", {"evt_1"})
    assert [r.status for r in log.runs["storm"]] == [503]


async def test_nginx_serves_every_port_and_the_slow_endpoints_after_their_delay(
    workdir: Path,
) -> None:
    headers = {"Svc-Event-Id": "evt_1", "Svc-Signature": "t=1,v1=abc"}
    receiver = Receiver(workdir, buffered=False, slow_delay=0.2, ports=2)
    async with receiver, aiohttp.ClientSession(headers=headers) as session:
        for url in (receiver.url("/a/e"), receiver.url("/b/e", port=1), receiver.slow_url("/c/e")):
            async with session.post(url, data=b"{}") as answer:
                assert answer.status == 204
    log = AccessLog(receiver.log_path)
    log.poll()
    assert {run: [r.status for r in got] for run, got in log.runs.items()} == {
        "a": [204],
        "b": [204],
        "c": [204],
    }
    assert log.runs["c"][0].took_ms >= 200
