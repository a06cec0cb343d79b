"""The benchmarks' receiver where nginx is missing: its Python stand-in writes the log line
nginx would, which the benchmarks read back as receipts."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from benchmarks.receipts import AccessLog
from harness.nginx import Receiver


async def test_the_stand_in_logs_every_request_as_nginx_would(tmp_path: Path) -> None:
    headers = {"Svc-Event-Id": "evt_1", "Svc-Signature": "t=1,v1=abc"}
    async with Receiver(tmp_path, buffered=False, prefer_nginx=False) as receiver:
        assert receiver.kind == "aiohttp"
        async with aiohttp.ClientSession() as session:
            async with session.post(receiver.url("/run1/e"), data=b"{}", headers=headers) as answer:
                assert answer.status == 204
            receiver.fail(True)
            async with session.post(
                receiver.url("/storm/e"), data=b"{}", headers=headers
            ) as answer:
                assert answer.status == 503
    log = AccessLog(*receiver.log_paths)
    log.poll()
    assert log.all_arrived("run1", {"evt_1"})
    assert [r.status for r in log.runs["storm"]] == [503]


async def test_the_stand_in_serves_every_port_and_a_stand_in_of_its_own_the_slow_one(
    tmp_path: Path,
) -> None:
    headers = {"Svc-Event-Id": "evt_1", "Svc-Signature": "t=1,v1=abc"}
    receiver = Receiver(tmp_path, buffered=False, prefer_nginx=False, slow_delay=0.2, ports=2)
    async with receiver, aiohttp.ClientSession(headers=headers) as session:
        for url in (receiver.url("/a/e"), receiver.url("/b/e", port=1), receiver.slow_url("/c/e")):
            async with session.post(url, data=b"{}") as answer:
                assert answer.status == 204
    slow_log = tmp_path / "receiver-slow" / "access.log"
    assert receiver.log_paths == [tmp_path / "receiver" / "access.log", slow_log]
    log = AccessLog(*receiver.log_paths)
    log.poll()
    assert {run: [r.status for r in got] for run, got in log.runs.items()} == {
        "a": [204],
        "b": [204],
        "c": [204],
    }
    assert log.runs["c"][0].took_ms >= 200
