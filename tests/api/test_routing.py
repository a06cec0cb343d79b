"""Route declarations: the rules derived from them are those the API has always had."""

from __future__ import annotations

import pytest
from aiohttp import web

from api.routes import ALL
from api.routing import Routes, table


def test_the_routes_that_must_carry_an_idempotency_key() -> None:
    declared = {
        (route.method, route.path)
        for routes in ALL
        for route in routes.declared
        if route.key_required
    }
    # The ones that create payments or move money, as the spec names them.
    assert declared == {
        ("POST", "/v1/payments"),
        ("POST", "/v1/terminals/{terminal_id}/payments"),
        ("POST", "/v1/payments/{payment_id}/refunds"),
        ("POST", "/v1/payouts"),
    }


async def _handler(request: web.Request) -> web.Response:
    return web.Response()


def test_a_route_declared_twice_is_refused() -> None:
    first, second = Routes("Tag"), Routes("Tag")
    first.get("/v1/things", "things:read", {"operationId": "a"})(_handler)
    second.get("/v1/things", "things:read", {"operationId": "b"})(_handler)
    with pytest.raises(ValueError, match="GET /v1/things is declared twice"):
        table([first, second])


def test_a_path_parameter_must_be_described() -> None:
    routes = Routes("Tag")
    with pytest.raises(KeyError):
        routes.get("/v1/things/{thing_id}", "things:read", {"operationId": "a"})
