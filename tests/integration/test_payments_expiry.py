"""Open online payments expire after ``SVC_PAYMENT_EXPIRY`` and become ``canceled``."""

from __future__ import annotations

import time
from dataclasses import replace

import orjson
import pytest

from harness.receivers import Receiver
from svc.settings import Settings
from tests.conftest import Api
from tests.integration.test_payments import create


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return replace(settings, payment_expiry=1.0, expiry_sweep_interval=0.1)


async def test_open_payment_expires_as_canceled(api: Api, receiver: Receiver) -> None:
    await api.endpoint(receiver.url("/hook"), ["payment.canceled"])
    status, payment = await create(api)
    assert status == 201
    created = time.monotonic()
    status, body = await api.call("GET", f"/v1/payments/{payment['id']}?wait=10")
    assert body["status"] == "canceled" and body["cancel_reason"] == "expired"
    assert 0.9 < time.monotonic() - created < 3
    received = await receiver.wait_for(lambda r: len(r) >= 1)
    data = orjson.loads(received[0].body)["data"]
    assert data["id"] == payment["id"]
    assert data["status"] == "canceled" and data["cancel_reason"] == "expired"
