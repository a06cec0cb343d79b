"""End to end: an event published through the kernel reaches a real receiver, signed."""

from __future__ import annotations

import time

from harness.receivers import Receiver
from svc.context import Context
from svc.events.flow import emit
from svc.signing import verify
from tests.conftest import Api


async def test_event_is_delivered_signed(api: Api, ctx: Context, receiver: Receiver) -> None:
    endpoint = await api.endpoint(receiver.url("/hook"), ["payment.succeeded"])
    secret = endpoint["secret"]
    assert isinstance(secret, str) and secret.startswith("whsec_")
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None

    event = await emit(
        ctx,
        scope.org,
        scope.env,
        "payment.succeeded",
        {"id": "pay_1", "status": "succeeded", "amount": 2450},
    )

    received = await receiver.wait_for(lambda r: len(r) >= 1)
    request = received[0]
    assert request.body == event.body
    assert request.headers["Content-Type"] == "application/json"
    timestamp = verify(request.headers["Svc-Signature"], request.body, secret)
    assert abs(timestamp - time.time()) < 5
