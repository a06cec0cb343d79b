"""The shared webhook receiver: verifying endpoints, answers as told, a stop that refuses."""

from __future__ import annotations

import aiohttp
import orjson
import pytest

from harness.receivers import Receiver
from svc.signing import SIGNATURE_HEADER, new_signing_secret, sign


def _event(event_id: str, payment_id: str) -> bytes:
    return orjson.dumps({"id": event_id, "type": "payment.created", "data": {"id": payment_id}})


async def test_a_verifying_endpoint_keeps_signed_events_and_counts_bad_signatures() -> None:
    secret = new_signing_secret()
    async with Receiver("r1") as receiver, aiohttp.ClientSession() as session:
        receiver.add("/shop", secret)
        body = _event("evt_1", "pay_1")
        signed = {SIGNATURE_HEADER: sign(secret, body)}
        async with session.post(receiver.url("/shop"), data=body, headers=signed) as answer:
            assert answer.status == 204
        forged = {SIGNATURE_HEADER: sign(new_signing_secret(), body)}
        async with session.post(receiver.url("/shop"), data=body, headers=forged) as answer:
            assert answer.status == 400
        receiver.failing.add("/shop")
        async with session.post(receiver.url("/shop"), data=body, headers=signed) as answer:
            assert answer.status == 503
    endpoint = receiver.endpoints["/shop"]
    assert [(r.event_id, r.payment_id) for r in endpoint.receipts] == [("evt_1", "pay_1")]
    assert endpoint.bad_signatures == 1
    assert receiver.received == []  # a verifying endpoint keeps receipts, not whole requests


async def test_other_paths_answer_as_told_and_keep_each_request() -> None:
    async with Receiver() as receiver, aiohttp.ClientSession() as session:
        receiver.on("/flaky", lambda _path, count: 500 if count == 1 else 204)
        receiver.answer_with("/flaky", {"Retry-After": "3"})
        for expected in (500, 204):
            async with session.post(receiver.url("/flaky"), data=b"x") as answer:
                assert answer.status == expected
                assert answer.headers["Retry-After"] == "3"
        got = await receiver.wait_for(lambda received: len(received) >= 2, timeout=5)
    assert [r.body for r in got] == [b"x", b"x"]
    assert receiver.at("/flaky") == got


async def test_a_stopped_receiver_refuses_connections_and_comes_back_on_its_port() -> None:
    receiver = Receiver()
    await receiver.start()
    port = receiver.port
    await receiver.stop()
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectionError):
            await session.post(receiver.url("/a"), data=b"x")
        await receiver.start()
        try:
            async with session.post(receiver.url("/a"), data=b"x") as answer:
                assert answer.status == 204
        finally:
            await receiver.stop()
    assert receiver.port == port
