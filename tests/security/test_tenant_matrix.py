"""Every route that names an object answers another scope as if the object did not exist, and
every list shows another scope none of the owner's objects.

A scope is an organisation and an environment; the owner and the outsiders are those of
``tests.security.tenant_world``. The routes are read from the application itself, so a new
route cannot skip the matrix: a path parameter ``OBJECTS`` cannot make an object for, a write
naming an object whose valid body ``BODIES`` does not give, or a parameterless ``/v1`` read that
``LISTS`` does not cover fails ``test_the_matrix_covers_every_route``.

An outsider's answer about the owner's object must be the answer it gets for an id that exists
nowhere: a 404, or a refusal made before any lookup (``ID_BLIND``: a live key raising a sandbox
chargeback is ``sandbox_only`` whatever the id). The owner then makes each request itself, so a
404 is known to come from the scope and not from a wrong id or a body refused first.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from api.app import build_app
from api.dashboard import PREFIX as DASHBOARD
from harness.receivers import Receiver
from svc.context import Context
from svc.ids import new_id
from tests.conftest import Api, Running
from tests.dashboard.conftest import Dashboard
from tests.security import tenant_world as made
from tests.security.tenant_world import OTHER, OWNER, Maker, World, answer

pytestmark = pytest.mark.settings(payout_schedule="manual", dashboard_secure_cookies=False)

OBJECTS: dict[str, tuple[str, Maker]] = {
    "endpoint_id": ("we", made.endpoint),
    "payment_id": ("pay", made.payment),
    "event_id": ("evt", made.event),
    "key_id": ("key", made.api_key),
    "terminal_id": ("trm", made.terminal),
    "refund_id": ("re", made.refund_of_payment),
    "chargeback_id": ("cb", made.chargeback),
    "payout_id": ("po", made.payout),
}
"""Path parameter → the prefix of its ids and how the owner makes one, in this order (the event
is the payment's, delivered to the endpoint; the refund is the payment's)."""

_ENDPOINT = "/v1/webhook_endpoints/{endpoint_id}"
_HOUR_AGO = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/v1/payments/{payment_id}/cancel"): {},
    ("POST", "/v1/payments/{payment_id}/refunds"): {"data": {"amount": "100"}},
    ("POST", "/v1/sandbox/payments/{payment_id}/chargeback"): {"data": {"reason": "fraudulent"}},
    ("POST", "/v1/terminals/{terminal_id}/payments"): {
        "data": {"amount": "1200", "currency": "CHF", "tip_prompt": "false"}
    },
    ("PATCH", _ENDPOINT): {"json": {"description": "changed"}},
    ("POST", _ENDPOINT + "/rotate_secret"): {"json": {"expire_previous_in": 0}},
    ("POST", _ENDPOINT + "/recover"): {"json": {"since": _HOUR_AGO}},
    ("POST", _ENDPOINT + "/test"): {},
    ("DELETE", _ENDPOINT): {},
    ("POST", "/v1/events/{event_id}/resend"): {},
    ("POST", "/v1/api_keys/{key_id}/roll"): {"json": {"expire_previous_in": 0}},
    ("DELETE", "/v1/api_keys/{key_id}"): {},
}
"""Every write that names an object → a body its route accepts (empty: none)."""

ID_BLIND = frozenset({"sandbox_only"})
"""Codes of refusals made before the object is looked up, the same for every id."""

CONNECTED = "connected organisation"
LISTS: dict[str, str] = {
    "/v1/payments": "payment_id",
    "/v1/terminals": "terminal_id",
    "/v1/webhook_endpoints": "endpoint_id",
    "/v1/events": "event_id",
    "/v1/deliveries": "endpoint_id",
    "/v1/refunds": "refund_id",
    "/v1/chargebacks": "chargeback_id",
    "/v1/payouts": "payout_id",
    "/v1/balance_transactions": "payout_id",
    "/v1/api_keys": "key_id",
    "/v1/organisations": CONNECTED,
    "/v1/partner/earnings": CONNECTED,
}
"""Every parameterless list → the owner's object the owner's answer shows."""

FILTERS: dict[str, dict[str, str]] = {
    "/v1/payments": {"terminal_id": "terminal_id"},
    "/v1/refunds": {"payment_id": "payment_id"},
    "/v1/balance_transactions": {"source_id": "payment_id"},
}
"""Lists filtered by an object's id → query parameter → the owner's object it names: asked by
an outsider, still none of the owner's objects."""

REFUSED = frozenset({(403, "partner_only"), (404, "organisation_not_found")})
"""Answers to a list that show nothing: a key of no partner, or acting for no organisation of
its own."""

ORG_WIDE = frozenset({"/v1/organisations"})
"""Lists of the organisation itself, the same in both of its environments."""

BALANCE = "/v1/balance"
"""The scope's sums: for every key, the sums of its own ledger (``/v1/balance_transactions``)."""
SETTINGS = frozenset({"/v1/notification_settings"})
"""The scope's settings, one object per scope (tests/integration/test_notices.py shows another
scope none of the owner's)."""

PARAM = re.compile(r"\{(\w+)")


def served(ctx: Context) -> set[tuple[str, str]]:
    """(method, route template) of every route of the application the service builds."""
    return {
        (route.method, route.resource.canonical)
        for route in build_app(ctx).router.routes()
        if route.resource is not None and route.method != "HEAD"
    }


def naming(routes: set[tuple[str, str]], prefix: str) -> list[tuple[str, str]]:
    """The routes under ``prefix`` whose path names an object; reads first, deletes last."""
    order = {"GET": 0, "DELETE": 2}
    found = [(m, p) for m, p in routes if p.startswith(prefix) and PARAM.search(p)]
    return sorted(found, key=lambda route: (order.get(route[0], 1), route[1], route[0]))


def fill(path: str, ids: dict[str, str]) -> str:
    return PARAM.sub(lambda m: ids[m.group(1)], path.replace("}", ""))


def nowhere() -> dict[str, str]:
    """An id of each kind that no scope has."""
    return {param: new_id(prefix) for param, (prefix, _) in OBJECTS.items()}


async def outcome(api: Api, method: str, path: str, ids: dict[str, str]) -> tuple[int, object]:
    """Status and Problem code of ``method path`` naming ``ids``, with the route's valid body."""
    kwargs = dict(BODIES.get((method, path), {}))
    if method != "GET":
        kwargs["headers"] = {"Idempotency-Key": uuid.uuid4().hex}
    status, body = await answer(api, method, fill(path, ids), **kwargs)
    return status, problem_code(body)


@pytest.fixture
async def world(ctx: Context, make_api: Any, receiver: Receiver) -> World:
    makers = {param: make for param, (_, make) in OBJECTS.items()}
    return await made.build(ctx, make_api, receiver, makers)


async def test_the_matrix_covers_every_route(ctx: Context) -> None:
    routes = served(ctx)
    named = naming(routes, "/v1/") + naming(routes, DASHBOARD + "/")
    unknown = {param for _, path in named for param in PARAM.findall(path)} - set(OBJECTS)
    assert not unknown, f"path parameters OBJECTS cannot make an object for: {unknown}"
    writes = {(method, path) for method, path in naming(routes, "/v1/") if method != "GET"}
    assert writes == set(BODIES), "every write that names an object, and only those, in BODIES"
    reads = {p for m, p in routes if m == "GET" and p.startswith("/v1/") and not PARAM.search(p)}
    assert reads == set(LISTS) | {BALANCE} | SETTINGS, (
        "every parameterless read in LISTS (or BALANCE, SETTINGS)"
    )


async def test_another_scope_gets_404_from_every_route_that_names_an_object(
    world: World, ctx: Context
) -> None:
    routes = naming(served(ctx), "/v1/")
    owner = world.owner
    failures: list[str] = []
    for outsider in world.outsiders:
        for method, path in routes:
            found = await outcome(outsider.api, method, path, owner.ids)
            missing = await outcome(outsider.api, method, path, nowhere())
            if found != missing or not (found[0] == 404 or found[1] in ID_BLIND):
                failures.append(f"{outsider.name}: {method} {path} {found}, nowhere {missing}")
    for method, path in routes:  # the owner last: some of these change or delete the object
        status, code = await outcome(owner.api, method, path, owner.ids)
        if status in (404, 422) or status >= 500:
            failures.append(f"the owner: {method} {path} ({status}, {code})")
    assert not failures, "\n".join(failures)


async def test_lists_show_another_scope_none_of_the_owners_objects(world: World) -> None:
    owner = world.owner
    failures: list[str] = []
    owned: set[str] = set()
    for path, kind in LISTS.items():
        status, body = await answer(owner.api, "GET", path, params={"limit": "100"})
        shown = world.connected_org if kind == CONNECTED else owner.ids[kind]
        if status != 200 or shown not in orjson.dumps(body).decode():
            failures.append(f"the owner: GET {path} ({status}) does not show {shown}")
        elif path not in ORG_WIDE:
            owned |= {str(item["id"]) for item in body["data"] if "id" in item}
    for path, query in queries(world):
        if (status := (await answer(owner.api, "GET", path, params=query))[0]) != 200:
            failures.append(f"the owner: GET {path} {query} ({status})")
    for outsider in world.outsiders:
        for path, query in queries(world):
            forbidden = set(owned)
            if outsider.connected == "foreign" or (
                outsider.connected == "org_wide" and path not in ORG_WIDE
            ):
                forbidden.add(world.connected_org)
            status, body = await answer(outsider.api, "GET", path, params=query)
            seen = sorted(i for i in forbidden if i in orjson.dumps(body).decode())
            if (status != 200 and (status, problem_code(body)) not in REFUSED) or seen:
                failures.append(f"{outsider.name}: GET {path} {query} ({status}) shows {seen}")
    for name, api in [("the owner", owner.api)] + [(o.name, o.api) for o in world.outsiders]:
        sums, ledger = await balance_and_ledger(api)
        if sums != ledger or (api is owner.api and not sums):
            failures.append(f"{name}: GET {BALANCE} {sums}, its own ledger {ledger}")
    assert not failures, "\n".join(failures)


def queries(world: World) -> list[tuple[str, dict[str, str]]]:
    """Each list's first page, and its pages filtered by the owner's objects."""
    pages = [(path, {"limit": "100"}) for path in LISTS]
    for path, filters in FILTERS.items():
        pages += [(path, {"limit": "100", p: world.owner.ids[k]}) for p, k in filters.items()]
    return pages


def problem_code(body: object) -> object:
    return body.get("code") if isinstance(body, dict) else None


async def balance_and_ledger(api: Api) -> tuple[dict[str, int], dict[str, int]]:
    """The balance (available and pending) and the sum of the ledger, by currency (non-zero;
    none where the key is refused)."""
    status, body = await answer(api, "GET", BALANCE)
    if (status, problem_code(body)) in REFUSED:
        return {}, {}
    assert status == 200, body
    sums: dict[str, int] = {}
    for item in body["available"] + body["pending"]:
        sums[item["currency"]] = sums.get(item["currency"], 0) + item["amount"]
    status, listed = await answer(api, "GET", "/v1/balance_transactions", params={"limit": "100"})
    assert status == 200 and not listed["has_more"], listed
    ledger: dict[str, int] = {}
    for item in listed["data"]:
        ledger[item["currency"]] = ledger.get(item["currency"], 0) + item["amount"]
    return {c: a for c, a in sums.items() if a}, {c: a for c, a in ledger.items() if a}


DASHBOARD_OUTSIDERS = {
    "another organisation": ("test", OTHER),
    "the other environment": ("live", OWNER),
}


async def test_dashboard_pages_that_name_an_object_are_404_to_another_scope(
    world: World, ctx: Context, service: Running
) -> None:
    routes = naming(served(ctx), DASHBOARD + "/")
    failures: list[str] = []
    signed_in: dict[str, Dashboard] = {}
    try:
        for name, (env, org) in {**DASHBOARD_OUTSIDERS, "the owner": ("test", OWNER)}.items():
            secret, _ = await ctx.api_keys.create(env, org)
            signed_in[name] = Dashboard(service.base_url)
            assert (await signed_in[name].sign_in(secret)).status == 303
        for name in DASHBOARD_OUTSIDERS:
            token = (await signed_in[name].get(DASHBOARD + "/webhooks")).token
            for method, path in routes:
                found = await page(signed_in[name], method, fill(path, world.owner.ids), token)
                missing = await page(signed_in[name], method, fill(path, nowhere()), token)
                if (found, missing) != (404, 404):
                    failures.append(f"{name}: {method} {path} {found}, nowhere {missing}")
        for path in (path for method, path in routes if method == "GET"):
            status = await page(signed_in["the owner"], "GET", fill(path, world.owner.ids), "")
            if status != 200:
                failures.append(f"the owner: GET {path} {status}")
        failures += await dashboard_lists(world, signed_in, served(ctx))
    finally:
        for dashboard in signed_in.values():
            await dashboard.session.close()
    assert not failures, "\n".join(failures)


async def dashboard_lists(
    world: World, signed_in: dict[str, Dashboard], routes: set[tuple[str, str]]
) -> list[str]:
    """The dashboard's pages that name no object show outsiders none of the owner's objects
    (and the owner, between them, every object kind the dashboard lists)."""
    pages = sorted(p for m, p in routes if m == "GET" and p.startswith(DASHBOARD) and "{" not in p)
    owned = set(world.owner.ids.values())
    failures: list[str] = []
    for name in DASHBOARD_OUTSIDERS:
        for path in pages:
            text = (await signed_in[name].get(path)).text
            if seen := sorted(i for i in owned if i in text):
                failures.append(f"{name}: GET {path} shows {seen}")
    text = "".join([(await signed_in["the owner"].get(path)).text for path in pages])
    listed = {world.owner.ids[kind] for kind in ("endpoint_id", "payment_id", "event_id", "key_id")}
    if missing := sorted(i for i in listed if i not in text):
        failures.append(f"the owner: no dashboard page lists {missing}")
    return failures


async def page(dashboard: Dashboard, method: str, path: str, token: str) -> int:
    """The status of a dashboard page, or of a form's POST with the session's CSRF token."""
    if method == "GET":
        return (await dashboard.get(path, follow=False)).status
    return (await dashboard.post(path, {"csrf_token": token}, follow=False)).status
