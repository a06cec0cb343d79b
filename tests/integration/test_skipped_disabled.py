"""Nothing is gone while an endpoint is disabled: its events are logged as skipped_disabled
(from the fan-out and from jobs alike), and re-enabling it with replay queues them again, in
the order they were created; without replay they stay skipped."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from harness.receivers import Receiver
from svc.amqp.delivery_jobs import DeliveryJob
from svc.context import Context
from svc.envelope import Event
from svc.events.flow import emit
from tests.conftest import Api
from tests.integration.test_endpoint_recovery import now_ms, staged_resends, stored_event


async def _org(ctx: Context, api: Api) -> str:
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    return scope.org


async def _skipped(api: Api, endpoint_id: object, count: int) -> list[dict[str, Any]]:
    """The endpoint's log of skipped events, once it holds ``count``."""
    return await _logged(api, endpoint_id, "skipped_disabled", count)


async def _logged(api: Api, endpoint_id: object, outcome: str, count: int) -> list[dict[str, Any]]:
    """The endpoint's attempts with ``outcome``, once the log holds ``count``."""
    path = f"/v1/webhook_endpoints/{endpoint_id}/deliveries"
    async with asyncio.timeout(10):
        while True:
            status, page = await api.call("GET", path, params={"outcome": outcome})
            assert status == 200 and isinstance(page, dict)
            if len(page["data"]) >= count:
                return list(page["data"])
            await asyncio.sleep(0.1)


async def _disabled(ctx: Context, api: Api, receiver: Receiver, path: str) -> dict[str, Any]:
    endpoint = await api.endpoint(receiver.url(path), ["payment.created"])
    status, _ = await api.call(
        "PATCH", f"/v1/webhook_endpoints/{endpoint['id']}", json={"disabled": True}
    )
    assert status == 200
    await asyncio.sleep(0.3)  # the change notice reaches the dispatcher's cache
    return endpoint


async def _emit_three(ctx: Context, api: Api) -> list[Event]:
    org = await _org(ctx, api)
    return [await emit(ctx, org, "test", "payment.created", {"id": f"pay_{n}"}) for n in range(3)]


async def test_events_while_disabled_are_logged_and_replayed(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    endpoint = await _disabled(ctx, api, receiver, "/replayed")
    events = await _emit_three(ctx, api)
    skipped = await _skipped(api, endpoint["id"], 3)
    assert {r["event_id"] for r in skipped} == {e.id for e in events}
    assert all(
        (r["status_code"], r["trigger"], r["attempt"]) == (None, "initial", 1) for r in skipped
    )
    assert receiver.received == []
    status, page = await api.call("GET", "/v1/deliveries", params={"outcome": "skipped_disabled"})
    assert status == 200 and isinstance(page, dict) and len(page["data"]) == 3

    path = f"/v1/webhook_endpoints/{endpoint['id']}"
    status, view = await api.call("PATCH", path, json={"disabled": False, "replay": True})
    assert status == 200 and isinstance(view, dict) and view["disabled"] is False
    got = await receiver.wait_for(lambda r: len(r) >= 3, timeout=15)
    assert sorted(orjson.loads(r.body)["id"] for r in got) == sorted(e.id for e in events)
    succeeded = await _logged(api, endpoint["id"], "success", 3)
    assert [r["trigger"] for r in succeeded] == ["resend"] * 3


@pytest.mark.roles("api", "dispatcher")  # no scheduler: the staged resends wait in their queue
async def test_a_replay_is_staged_in_the_order_the_events_were_created(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    endpoint = await _disabled(ctx, api, receiver, "/ordered")
    org = await _org(ctx, api)
    # Stored (with their times) in one order, delivered to the dispatcher in another.
    events = [await stored_event(ctx, org, now_ms() - k * 60_000) for k in (1, 3, 2)]
    await ctx.broker.jobs(
        [DeliveryJob.of(e, org, str(endpoint["id"])) for e in events], ctx.topology.deliveries
    )
    await _skipped(api, endpoint["id"], 3)
    path = f"/v1/webhook_endpoints/{endpoint['id']}"
    status, _ = await api.call("PATCH", path, json={"disabled": False, "replay": True})
    assert status == 200
    oldest_first = [e.id for e in sorted(events, key=lambda e: e.created_ms)]
    assert await staged_resends(ctx) == [(e, "resend", endpoint["id"]) for e in oldest_first]


async def test_without_replay_the_events_stay_skipped(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    endpoint = await _disabled(ctx, api, receiver, "/kept")
    await _emit_three(ctx, api)
    await _skipped(api, endpoint["id"], 3)
    path = f"/v1/webhook_endpoints/{endpoint['id']}"
    status, _ = await api.call("PATCH", path, json={"disabled": False, "replay": False})
    assert status == 200
    await asyncio.sleep(1.5)
    assert receiver.received == []
    assert len(await _skipped(api, endpoint["id"], 3)) == 3


async def test_a_job_for_a_disabled_endpoint_is_logged_as_skipped(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    endpoint = await _disabled(ctx, api, receiver, "/job")
    org = await _org(ctx, api)
    event = await emit(ctx, org, "test", "refund.succeeded", {"id": "re_1"})  # not subscribed
    job = DeliveryJob.of(event, org, str(endpoint["id"]), "retry")
    await ctx.broker.jobs([job], ctx.topology.deliveries)
    [row] = await _skipped(api, endpoint["id"], 1)
    assert (row["event_id"], row["trigger"]) == (event.id, "retry")
    assert receiver.received == []


async def test_replay_needs_enabling(api: Api, receiver: Receiver) -> None:
    endpoint = await api.endpoint(receiver.url("/x"), ["payment.created"])
    path = f"/v1/webhook_endpoints/{endpoint['id']}"
    for body in ({"replay": True}, {"replay": True, "disabled": True}):
        status, problem = await api.call("PATCH", path, json=body)
        assert status == 422 and isinstance(problem, dict), body
        assert [(e["field"], e["code"]) for e in problem["errors"]] == [
            ("replay", "replay_without_enabling")
        ]
    status, problem = await api.call("PATCH", path, json={"replay": "yes", "disabled": False})
    assert status == 422 and isinstance(problem, dict)
    assert [(e["field"], e["code"]) for e in problem["errors"]] == [("replay", "invalid_type")]


async def test_another_organisation_cannot_replay(
    api: Api, ctx: Context, receiver: Receiver, make_api: Any
) -> None:
    endpoint = await _disabled(ctx, api, receiver, "/mine")
    stranger = await make_api(org="globex")
    path = f"/v1/webhook_endpoints/{endpoint['id']}"
    status, _ = await stranger.call("PATCH", path, json={"disabled": False, "replay": True})
    assert status == 404
