"""The endpoint page's delivery log searched through its URL (the API's filters, a small form),
and the button that enables an endpoint and delivers the events skipped while it was off."""

from __future__ import annotations

import time
from urllib.parse import urlencode

import pytest

from svc.context import Context
from svc.envelope import new_event
from svc.events.model import Attempt
from svc.ids import new_id
from svc.orgs import Scope
from svc.webhooks import flow
from svc.webhooks.model import Endpoint
from tests.dashboard.a11y import problems
from tests.dashboard.conftest import Dashboard, MakeDashboard
from tests.integration.test_endpoint_recovery import staged_resends

pytestmark = pytest.mark.roles("api")
HOOK = "https://hooks.example.com/svc"


def _attempt(event_id: str, kind: str, endpoint_id: str, ago_s: int, outcome: str) -> Attempt:
    status = {"success": 200, "http_error": 503}.get(outcome)
    at_ms = int(time.time() * 1000) - ago_s * 1000
    return Attempt(
        new_id("att"), event_id, kind, endpoint_id, 1, "initial", outcome,
        status, None, 5.0, "", at_ms, None,
    )  # fmt: skip


async def _setup(make_dashboard: MakeDashboard, ctx: Context) -> tuple[Dashboard, Endpoint]:
    """A signed-in dashboard and an endpoint of its scope."""
    dashboard, key = await make_dashboard()
    scope = await ctx.api_keys.resolve(key)
    assert scope is not None
    async with ctx.unit() as unit:
        endpoint = await flow.create(ctx, unit, scope, HOOK, ["payment.succeeded"], "")
    return dashboard, endpoint


async def test_the_log_is_searched_by_the_filters_in_the_url(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, endpoint = await _setup(make_dashboard, ctx)
    await ctx.deliveries.record(
        [
            _attempt("evt_failed", "payment.succeeded", endpoint.id, 30, "http_error"),
            _attempt("evt_ok", "payment.succeeded", endpoint.id, 20, "success"),
            _attempt("evt_off", "payment.failed", endpoint.id, 10, "skipped_disabled"),
        ]
    )
    path = f"/dashboard/webhooks/{endpoint.id}"
    whole = await dashboard.get(path)
    assert all(e in whole.text for e in ("evt_failed", "evt_ok", "evt_off"))

    searched = await dashboard.get(f"{path}?{urlencode({'status_code': '5xx', 'outcome': ''})}")
    assert searched.status == 200
    assert "evt_failed" in searched.text and "evt_ok" not in searched.text
    assert 'value="5xx"' in searched.text  # the form shows the search
    assert "/deliveries?status_code=5xx" in searched.text  # the poller keeps it
    assert problems(searched.text) == []
    skipped = await dashboard.get(f"{path}?outcome=skipped_disabled")
    assert "evt_off" in skipped.text and "evt_failed" not in skipped.text
    fragment = await dashboard.get(f"{path}/deliveries?event_type=payment.failed")
    assert "evt_off" in fragment.text and "evt_ok" not in fragment.text
    none = await dashboard.get(f"{path}?event_id=evt_nothing")
    assert "No deliveries match this search." in none.text

    bad = await dashboard.get(f"{path}?status_code=5x")
    assert bad.status == 422


async def test_enable_and_deliver_the_skipped_events(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, endpoint = await _setup(make_dashboard, ctx)
    scope = Scope(endpoint.org, endpoint.env)
    path = f"/dashboard/webhooks/{endpoint.id}"
    token = (await dashboard.get(path)).token
    off = await dashboard.post(f"{path}/disable", {"csrf_token": token})
    assert "Enable and deliver skipped events" in off.text
    event = new_event("payment.succeeded", scope.env, {"id": "pay_1"})
    async with ctx.unit() as unit:
        await ctx.events.insert(unit, event, scope.org, outbox=False)
    await ctx.deliveries.record(
        [_attempt(event.id, event.type, endpoint.id, 5, "skipped_disabled")]
    )
    on = await dashboard.post(f"{path}/enable", {"csrf_token": token, "replay": "true"})
    assert on.status == 200 and "skipped while it was disabled are delivered" in on.text
    assert "Enable and deliver skipped events" not in on.text
    stored = await ctx.endpoints.get(scope, endpoint.id)
    assert stored is not None and not stored.disabled
    assert await staged_resends(ctx) == [(event.id, "resend", endpoint.id)]
