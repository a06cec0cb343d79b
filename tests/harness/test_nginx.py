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
