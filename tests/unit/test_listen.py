"""``svc listen`` accepts correctly signed deliveries and rejects others."""

from __future__ import annotations

import io

from aiohttp.test_utils import TestClient, TestServer

from cli.listen import listener
from svc.signing import sign

SECRET = "whsec_listen"


async def test_listener_verifies() -> None:
    out = io.StringIO()
    async with TestClient(TestServer(listener(SECRET, out))) as client:
        body = b'{"id":"evt_1"}'
        good = await client.post(
            "/hooks",
            data=body,
            headers={"Svc-Signature": sign(SECRET, body), "Svc-Event-Type": "payment.created"},
        )
        assert good.status == 204
        bad = await client.post("/hooks", data=body, headers={"Svc-Signature": "t=1,v1=00"})
        assert bad.status == 400
    lines = out.getvalue().splitlines()
    assert lines[0] == 'verified payment.created {"id":"evt_1"}'
    assert lines[1].startswith("rejected /hooks")
