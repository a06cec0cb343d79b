"""Developer → Notifications: the addresses of this mode's email notices, named and checked as
PUT /v1/notification_settings names and checks them, out of another scope's reach."""

from __future__ import annotations

import pytest

from svc.context import Context
from svc.orgs import Scope
from tests.dashboard.a11y import problems
from tests.dashboard.conftest import MakeDashboard

pytestmark = pytest.mark.roles("api")
PAGE = "/dashboard/notifications"


async def test_addresses_are_named_checked_and_kept_per_scope(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, key = await make_dashboard()
    scope = await ctx.api_keys.resolve(key)
    assert scope is not None
    page = await dashboard.get(PAGE)
    assert page.status == 200 and "no mail server is configured" in page.text
    assert not problems(page.text)
    developer = await dashboard.get("/dashboard/developer")
    assert f'href="{PAGE}"' in developer.text

    saved = await dashboard.post(
        PAGE, {"emails": "ops@shop.example\n\n dev@shop.example \n", "csrf_token": page.token}
    )
    assert saved.status == 200 and "Saved." in saved.text
    assert await ctx.notices.emails(Scope(scope.org, scope.env)) == [
        "ops@shop.example",
        "dev@shop.example",
    ]
    assert "ops@shop.example\ndev@shop.example</textarea>" in (await dashboard.get(PAGE)).text

    refused = await dashboard.post(
        PAGE, {"emails": "ops@shop.example\nnot an address", "csrf_token": page.token}
    )
    assert refused.status == 422 and "Not an email address." in refused.text
    assert "not an address</textarea>" in refused.text  # shown again as typed
    assert not problems(refused.text)
    assert len(await ctx.notices.emails(Scope(scope.org, scope.env))) == 2
    forged = await dashboard.post(PAGE, {"emails": "x@evil.example", "csrf_token": "forged"})
    assert forged.status == 403

    # Another organisation's page shows none of them and saves its own.
    other, _ = await make_dashboard(org="globex")
    theirs = await other.get(PAGE)
    assert "ops@shop.example" not in theirs.text
    await other.post(PAGE, {"emails": "them@globex.example", "csrf_token": theirs.token})
    assert await ctx.notices.emails(Scope(scope.org, scope.env)) == [
        "ops@shop.example",
        "dev@shop.example",
    ]
