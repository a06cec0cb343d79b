"""Every route of the API has a permission or is named as public, so none ships unguarded."""

from __future__ import annotations

import re
from pathlib import Path

from api.app import build_app
from api.dashboard import PREFIX as DASHBOARD
from api.middleware.permissions import PERMISSIONS as UNDECLARED
from api.middleware.permissions import PUBLIC
from api.routes import permissions
from api.routes.checkout import checkout_path
from svc.context import Context
from svc.orgs.permissions import PERMISSIONS as KNOWN


async def test_every_route_has_a_permission_or_is_public(ctx: Context) -> None:
    app = build_app(ctx)
    served = {
        (route.method, route.resource.canonical)
        for route in app.router.routes()
        if route.resource is not None and route.method != "HEAD"
    }
    dashboard = {(m, p) for m, p in served if p == DASHBOARD or p.startswith(DASHBOARD + "/")}
    v1 = {(m, p) for m, p in served if p.startswith("/v1/")}
    public = {p for _, p in served - dashboard - v1}
    checkout = checkout_path(ctx)
    named = {p.replace("/checkout", checkout, 1) for p in PUBLIC}
    needed = {**UNDECLARED, **permissions()}
    assert v1 == set(needed), "every /v1 route, and only those, with its permission"
    assert public == named, "every other route named as public, and only those"
    assert set(needed.values()) <= set(KNOWN)


def test_the_keys_page_lists_each_route_under_its_permission() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "api" / "keys.md").read_text()
    listed: dict[tuple[str, str], str] = {}
    for line in page.splitlines():
        row = re.fullmatch(r"\| `([a-z_]+:(?:read|write))` \| (.+) \|", line)
        if row:
            for method, path in re.findall(r"`([A-Z]+) (/v1/[^`]+)`", row.group(2)):
                listed[(method, path)] = row.group(1)
    assert listed == {**UNDECLARED, **permissions()}
