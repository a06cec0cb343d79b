"""A dispatcher killed with SIGKILL in the middle of a burst of events, each with several
subscribers, loses no delivery."""

from __future__ import annotations

import pytest

from harness.processes import spawn
from harness.receivers import Receiver
from svc.context import Context
from svc.envelope import new_event
from svc.events.flow import publish_event
from svc.settings import Settings
from tests.conftest import Api

EVENTS = 400


@pytest.mark.settings(dispatcher_concurrency=100)
@pytest.mark.roles("api", "scheduler")  # the dispatcher runs as a child process
async def test_sigkill_during_burst_loses_nothing(
    settings: Settings, ctx: Context, receiver: Receiver, make_api: object
) -> None:
    receiver.slow("/slow", 0.05)  # keeps deliveries in flight when the kill lands
    api: Api = await make_api()  # type: ignore[operator]
    await api.endpoint(receiver.url("/slow"), ["payment.succeeded"])
    await api.endpoint(receiver.url("/fast"), ["payment.succeeded"])
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None

    dispatcher, _ = await spawn(settings, "dispatcher")
    published: list[str] = []
    for n in range(EVENTS):
        event = new_event(
            "payment.succeeded", "test", {"id": f"pay_{n}", "status": "succeeded", "amount": n}
        )
        await publish_event(ctx, event, scope.org)
        published.append(event.id)
        if n == EVENTS // 4:
            await receiver.wait_for(lambda r: len(r) >= 20)
            dispatcher.kill()  # SIGKILL: no chance to ack, drain or close
            assert await dispatcher.wait() == -9
    arrived_before_restart = len(receiver.received)
    assert arrived_before_restart < EVENTS, "the kill must happen mid-burst"

    replacement, _ = await spawn(settings, "dispatcher")
    try:
        for path in ("/slow", "/fast"):
            await receiver.wait_for(
                lambda r, path=path: (
                    {x.headers["Svc-Event-Id"] for x in receiver.at(path)} >= set(published)
                ),
                timeout=30,
            )
    finally:
        replacement.terminate()
        assert await replacement.wait() == 0
