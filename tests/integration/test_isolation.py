"""One hanging endpoint does not hold back deliveries to healthy endpoints."""

from __future__ import annotations

import time

import pytest

from harness.receivers import Receiver
from svc.context import Context
from svc.envelope import new_event
from svc.events.flow import publish_event
from tests.conftest import Api

EVENTS = 200


@pytest.mark.settings(
    delivery_timeout=3.0,
    dispatcher_concurrency=60,
    endpoint_concurrency=5,
    endpoint_wait=0.2,
    defer_delay=1.0,
)
async def test_hanging_endpoint_does_not_block_healthy_ones(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    receiver.on("/hang", lambda _path, _n: None)  # never answers: every request times out
    await api.endpoint(receiver.url("/hang"), ["payment.created"])
    await api.endpoint(receiver.url("/healthy"), ["payment.created"])
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None

    started = time.monotonic()
    for n in range(EVENTS):
        event = new_event(
            "payment.created", "test", {"id": f"pay_{n}", "status": "pending", "amount": n}
        )
        await publish_event(ctx, event, scope.org)
    await receiver.wait_for(lambda r: len(r) >= EVENTS, timeout=15)
    elapsed = time.monotonic() - started

    # Without a per-endpoint cap, hanging jobs would fill all 60 slots for 3 s at a time and
    # the healthy endpoint would get about 30 deliveries per 3 s: 200 would take ~20 s. With
    # the cap they take under 4 s on an idle machine; the bound leaves room for a machine busy
    # with the suite's other workers and stays far below 20 s.
    assert elapsed < 10.0, f"healthy deliveries took {elapsed:.1f} s"
    assert {r.path for r in receiver.received} == {"/healthy"}
    async with api.session.get(api.ops_url + "/metrics") as response:
        metrics = await response.text()
    deferred = [
        line for line in metrics.splitlines() if line.startswith("svc_deliveries_deferred_total ")
    ]
    assert deferred and float(deferred[0].split()[1]) > 0
