"""What a newcomer reads on the dashboard: a failed attempt's error in words, amounts as the
API gives them, endpoints named by their URL."""

from __future__ import annotations

import time

import pytest

from svc.context import Context
from svc.events.deliveries import Attempt
from svc.ids import new_id
from svc.orgs import Scope
from tests.dashboard.conftest import MakeDashboard

pytestmark = pytest.mark.roles("api")
HOOK = "https://hooks.example.com/svc"


async def _scope(ctx: Context, key: str) -> Scope:
    scope = await ctx.api_keys.resolve(key)
    assert scope is not None
    return scope


async def _endpoint(ctx: Context, scope: Scope, url: str = HOOK) -> str:
    from svc.webhooks import flow

    async with ctx.unit() as unit:
        endpoint = await flow.create(ctx, unit, scope, url, ["payment.succeeded"], "")
    return endpoint.id


async def test_a_failed_attempts_error_is_shown_in_words(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, key = await make_dashboard()
    endpoint_id = await _endpoint(ctx, await _scope(ctx, key))
    now = int(time.time() * 1000)
    error = "connection refused to hooks.example.com:443"
    attempt = Attempt(
        id=new_id("att"),
        event_id=new_id("evt"),
        event_type="payment.succeeded",
        endpoint_id=endpoint_id,
        attempt=1,
        trigger="test",
        outcome="connect",
        status_code=None,
        error=error,
        duration_ms=1.5,
        response_body="",
        attempted_ms=now,
        next_attempt_ms=now + 60_000,
    )
    await ctx.deliveries.record([attempt])
    page = await dashboard.get(f"/dashboard/webhooks/{endpoint_id}")
    assert f'<span class="hint attempt-error">{error}</span>' in page.text
