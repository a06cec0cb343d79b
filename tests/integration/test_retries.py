"""Retries follow the ladder, every attempt is logged, exhaustion is recorded."""

from __future__ import annotations

import asyncio

from harness.receivers import Receiver
from svc.context import Context
from svc.events.flow import emit
from tests.conftest import Api


async def _emit(ctx: Context, api: Api) -> str:
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    event = await emit(
        ctx,
        scope.org,
        scope.env,
        "payment.failed",
        {"id": "pay_r", "status": "failed", "amount": 990},
    )
    return event.id


async def test_fails_twice_then_succeeds_with_three_logged_attempts(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    receiver.on("/flaky", lambda _path, n: 500 if n <= 2 else 204)
    endpoint = await api.endpoint(receiver.url("/flaky"), ["payment.failed"])
    event_id = await _emit(ctx, api)

    received = await receiver.wait_for(lambda r: len(r) >= 3, timeout=20)
    times = [r.at for r in received]
    # Ladder 1s,2s..6s: retries 1 s after the first failure, then 2 s after the second.
    assert 0.95 <= times[1] - times[0] <= 2.0
    assert 1.95 <= times[2] - times[1] <= 3.0
    assert len({r.body for r in received}) == 1

    log = await _wait_log(api, f"/v1/events/{event_id}/deliveries", 3)
    assert [d["attempt"] for d in log] == [3, 2, 1]  # newest first
    assert [d["trigger"] for d in log] == ["retry", "retry", "initial"]
    assert [d["status_code"] for d in log] == [204, 500, 500]
    assert [d["outcome"] for d in log] == ["success", "http_error", "http_error"]
    assert log[0]["next_attempt_at"] is None
    assert log[1]["next_attempt_at"] is not None and log[2]["next_attempt_at"] is not None
    assert all(d["endpoint_id"] == endpoint["id"] for d in log)
    assert log[2]["response_body"] == "received"

    endpoint_log = await _wait_log(api, f"/v1/webhook_endpoints/{endpoint['id']}/deliveries", 3)
    assert [d["id"] for d in endpoint_log] == [d["id"] for d in log]
    status, event = await api.call("GET", f"/v1/events/{event_id}")
    assert status == 200 and isinstance(event, dict)
    assert event["deliveries"][0]["state"] == "succeeded"


async def test_exhausted_after_the_window(api: Api, ctx: Context, receiver: Receiver) -> None:
    receiver.on("/down", lambda _path, _n: 503)
    await api.endpoint(receiver.url("/down"), ["payment.failed"])
    event_id = await _emit(ctx, api)

    received = await receiver.wait_for(lambda r: len(r) >= 4, timeout=20)
    offsets = [r.at - received[0].at for r in received]
    for got, want in zip(offsets, [0, 1, 3, 5], strict=True):  # 1s,2s..6s: no try after 6 s
        assert want - 0.05 <= got <= want + 1.5

    state = await _wait_state(api, event_id, "exhausted")
    assert state["attempts"] == 4
    await asyncio.sleep(2.5)
    assert len(receiver.received) == 4, "nothing is sent after the window closed"
    metrics = await _metrics(api)
    assert "svc_deliveries_exhausted_total 1.0" in metrics


async def test_resend_sends_identical_bytes(api: Api, ctx: Context, receiver: Receiver) -> None:
    await api.endpoint(receiver.url("/r"), ["payment.failed"])
    event_id = await _emit(ctx, api)
    await receiver.wait_for(lambda r: len(r) >= 1)
    await asyncio.sleep(0.2)

    status, body = await api.call("POST", f"/v1/events/{event_id}/resend")
    assert status == 202, body
    received = await receiver.wait_for(lambda r: len(r) >= 2)
    assert received[0].body == received[1].body
    assert (
        received[0].headers["Svc-Signature"] != ""
        and received[1].headers["Svc-Event-Id"] == event_id
    )
    log = await _wait_log(api, f"/v1/events/{event_id}/deliveries", 2)
    assert [d["trigger"] for d in log] == ["resend", "initial"]


async def test_resend_of_unknown_event_is_404(api: Api) -> None:
    status, body = await api.call("POST", "/v1/events/evt_00000000000000000000000000/resend")
    assert status == 404 and isinstance(body, dict)
    assert body["code"] == "event_not_found"


async def _wait_log(api: Api, path: str, count: int) -> list[dict[str, object]]:
    for _ in range(100):
        status, body = await api.call("GET", path)
        assert status == 200, body
        assert isinstance(body, dict)
        if len(body["data"]) >= count:
            return list(body["data"])
        await asyncio.sleep(0.1)
    raise AssertionError(f"{path} never had {count} records")


async def _wait_state(api: Api, event_id: str, state: str) -> dict[str, object]:
    for _ in range(100):
        _, body = await api.call("GET", f"/v1/events/{event_id}")
        assert isinstance(body, dict)
        if body["deliveries"] and body["deliveries"][0]["state"] == state:
            return dict(body["deliveries"][0])
        await asyncio.sleep(0.1)
    raise AssertionError(f"event {event_id} never reached {state}")


async def _metrics(api: Api) -> str:
    async with api.session.get(api.ops_url + "/metrics") as response:
        return await response.text()
