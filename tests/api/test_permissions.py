"""Every route of the API is declared, with a permission under /v1, so none ships unguarded."""

from __future__ import annotations

import re
from pathlib import Path

from api.app import build_app
from api.dashboard import PAGES
from api.dashboard import PREFIX as DASHBOARD
from api.routes import ALL, permissions
from api.routes.checkout import checkout_path
from api.routing import table
from svc.context import Context
from svc.keys.model import PERMISSIONS as KNOWN


async def test_every_route_is_declared_with_a_permission_or_is_public(ctx: Context) -> None:
    app = build_app(ctx)
    served = {
        (route.method, route.resource.canonical)
        for route in app.router.routes()
        if route.resource is not None and route.method != "HEAD"
    }
    people = (DASHBOARD, *PAGES)
    pages = {
        (m, p) for m, p in served if p in people or p.startswith(tuple(f"{x}/" for x in people))
    }
    checkout = checkout_path(ctx)
    declared = {
        (method, path.replace("/checkout/", checkout + "/", 1)): route.permission
        for (method, path), route in table(ALL).items()
    }
    assert served - pages == set(declared), "every route of the API, and only those, declared"
    v1 = {(m, p) for m, p in declared if p.startswith("/v1/")}
    assert {key for key, permission in declared.items() if permission} == v1, (
        "every /v1 route, and only those, names a permission"
    )
    assert {p for m, p in set(declared) - v1} == {
        "/health",
        "/openapi.json",
        checkout + "/{payment_id}/{token}",
        "/terminal/v1/connect",
    }, "the public routes: liveness, this document, the checkout page, the device WebSocket"
    assert set(permissions().values()) <= set(KNOWN)


def test_the_keys_page_lists_each_route_under_its_permission() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "api" / "keys.md").read_text()
    listed: dict[tuple[str, str], str] = {}
    for line in page.splitlines():
        row = re.fullmatch(r"\| `([a-z_]+:(?:read|write))` \| (.+) \|", line)
        if row:
            for method, path in re.findall(r"`([A-Z]+) (/v1/[^`]+)`", row.group(2)):
                listed[(method, path)] = row.group(1)
    assert listed == permissions()
