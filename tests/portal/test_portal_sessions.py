"""POST /v1/portal_sessions and the portal it opens, over HTTP: the link's input, permission and
scope (a partner acting for a connected organisation too), one use per link, the session's
frame-ancestors, CSRF, and what the portal never shows."""

from __future__ import annotations

import re
import time
from datetime import datetime
from typing import Any

import pytest

from svc.context import Context
from svc.envelope import EVENT_TYPES
from tests.conftest import Api, Running
from tests.dashboard.conftest import Dashboard
from tests.portal.conftest import opened, portal_link

ORIGIN = "https://app.platform.example"


async def test_a_link_is_made_for_ten_minutes_and_opens_once(
    api: Api, service: Running, browsers: list[Dashboard]
) -> None:
    made = await portal_link(api, frame_origin=ORIGIN, name="Platform", accent_color="#0A7CFF")
    assert made["object"] == "portal_session"
    assert made["url"].startswith(f"{service.base_url}/portal/open/")
    left = datetime.fromisoformat(made["expires_at"]).timestamp() - time.time()
    assert 590 < left <= 600

    client = await opened(service.base_url, made["url"], browsers)
    home = await client.get("/portal/webhooks")
    assert "Platform" in home.text and 'href="/portal/brand.css"' in home.text
    brand = await client.get("/portal/brand.css")
    assert brand.text.strip() == ":root { --accent: #0a7cff; }"
    cookie = [c for c in client.session.cookie_jar if c.key == "svc_portal"][0]
    assert cookie["httponly"] and cookie["path"] == "/portal"
    assert cookie["samesite"] == "Lax"  # plain http to 127.0.0.1; None; Secure over https

    again = Dashboard(service.base_url)
    browsers.append(again)
    refused = await again.get(made["url"].removeprefix(service.base_url))
    assert refused.status == 403
    assert "opened before or has expired" in refused.text
    assert not [c for c in again.session.cookie_jar if c.key == "svc_portal"]
    unknown = await again.get("/portal/open/" + "x" * 43)
    assert unknown.status == 403


async def test_frame_ancestors_is_the_sessions_origin_or_none(
    api: Api, service: Running, browsers: list[Dashboard]
) -> None:
    framed = await opened(
        service.base_url, (await portal_link(api, frame_origin=ORIGIN))["url"], browsers
    )
    page = await framed.get("/portal/webhooks")
    assert f"frame-ancestors {ORIGIN};" in page.headers["Content-Security-Policy"]
    assert "X-Frame-Options" not in page.headers
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]

    alone = await opened(service.base_url, (await portal_link(api))["url"], browsers)
    page = await alone.get("/portal/webhooks")
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    assert page.headers["X-Frame-Options"] == "DENY"


async def test_without_a_session_every_page_is_refused(service: Running, api: Api) -> None:
    client = Dashboard(service.base_url)
    try:
        for path in ("/portal/webhooks", "/portal/events", "/portal/brand.css"):
            page = await client.get(path)
            assert page.status == 401 and "session has ended" in page.text, path
            assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    finally:
        await client.session.close()


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ({"frame_origin": "https://app.example/embed"}, "frame_origin", "invalid_origin"),
        ({"frame_origin": "https://app.example/"}, "frame_origin", "invalid_origin"),
        ({"frame_origin": "http://app.example"}, "frame_origin", "invalid_origin"),
        ({"frame_origin": "ftp://app.example"}, "frame_origin", "invalid_origin"),
        ({"frame_origin": "https://user@app.example"}, "frame_origin", "invalid_origin"),
        ({"frame_origin": "https://app.example:99999"}, "frame_origin", "invalid_origin"),
        ({"frame_origin": "https://app.example?x=1"}, "frame_origin", "invalid_origin"),
        ({"frame_origin": "https://*.example"}, "frame_origin", "invalid_origin"),
        ({"frame_origin": 5}, "frame_origin", "invalid_type"),
        ({"accent_color": "red"}, "accent_color", "invalid"),
        ({"accent_color": "#12345"}, "accent_color", "invalid"),
        ({"name": "x" * 101}, "name", "too_long"),
        ({"name": "a\nb"}, "name", "invalid"),
        ({"frame": ORIGIN}, "frame", "unknown_field"),
    ],
)
async def test_bad_input_is_a_422_naming_the_field(
    api: Api, body: dict[str, Any], field: str, code: str
) -> None:
    status, problem = await api.call("POST", "/v1/portal_sessions", json=body)
    assert status == 422, problem
    assert isinstance(problem, dict)
    assert [(e["field"], e["code"]) for e in problem["errors"]] == [(field, code)]


@pytest.mark.parametrize(
    ("origin", "kept"),
    [
        ("https://App.Example:8443", "https://app.example:8443"),
        ("https://app.example:443", "https://app.example"),
        ("http://127.0.0.1:5173", "http://127.0.0.1:5173"),
        ("http://localhost:3000", "http://localhost:3000"),
    ],
)
async def test_origins_are_kept_as_browsers_write_them(
    api: Api, service: Running, browsers: list[Dashboard], origin: str, kept: str
) -> None:
    client = await opened(
        service.base_url, (await portal_link(api, frame_origin=origin))["url"], browsers
    )
    page = await client.get("/portal/webhooks")
    assert f"frame-ancestors {kept};" in page.headers["Content-Security-Policy"]


async def test_it_needs_portal_write(service: Running, ctx: Context, make_api: Any) -> None:
    api: Api = await make_api()
    for permissions, status in ((["webhooks:write"], 403), (["portal:write"], 201)):
        key, _ = await ctx.api_keys.create("test", "acme", permissions=tuple(permissions))
        restricted = Api(api.session, key)
        answer, body = await restricted.call("POST", "/v1/portal_sessions", json={})
        assert answer == status, body
    _, problem = await Api(api.session, key.replace(key[-4:], "zzzz")).call(
        "POST", "/v1/portal_sessions", json={}
    )
    assert isinstance(problem, dict) and problem["code"] == "invalid_api_key"


async def test_a_partner_opens_the_portal_of_a_connected_organisation(
    make_api: Any, ctx: Context, service: Running, browsers: list[Dashboard]
) -> None:
    partner: Api = await make_api(org="platform")
    await ctx.orgs.mark_partner(await ctx.orgs.ensure("platform"))
    status, org = await partner.call("POST", "/v1/organisations", json={"name": "Bakery"})
    assert status == 201 and isinstance(org, dict), org
    merchant = Api(partner.session, org["api_keys"]["test"])
    own = await merchant.endpoint("https://bakery.example/hook", ["payment.succeeded"])
    theirs = await partner.endpoint("https://platform.example/hook", ["payment.succeeded"])

    acting = Api(partner.session, partner.key)
    acting.headers = {**partner.headers, "Svc-Organisation": org["id"]}
    client = await opened(service.base_url, (await portal_link(acting))["url"], browsers)
    page = await client.get("/portal/webhooks")
    assert str(own["id"]) in page.text and str(theirs["id"]) not in page.text
    assert (await client.get(f"/portal/webhooks/{theirs['id']}")).status == 404
    assert (await client.get(f"/portal/webhooks/{own['id']}")).status == 200


async def test_forms_need_the_sessions_token(
    api: Api, service: Running, browsers: list[Dashboard]
) -> None:
    endpoint = await api.endpoint("https://shop.example/hook", ["payment.succeeded"])
    client = await opened(service.base_url, (await portal_link(api))["url"], browsers)
    path = f"/portal/webhooks/{endpoint['id']}/disable"
    refused = await client.post(path, {"csrf_token": "x" * 43})
    assert refused.status == 403
    page = await client.get(f"/portal/webhooks/{endpoint['id']}")
    done = await client.post(path, {"csrf_token": page.token})
    assert done.status == 200 and "Endpoint disabled" in done.text


async def test_an_endpoint_is_edited_as_the_api_would(
    api: Api, service: Running, browsers: list[Dashboard]
) -> None:
    endpoint = await api.endpoint("https://shop.example/hook", ["payment.succeeded"])
    client = await opened(service.base_url, (await portal_link(api))["url"], browsers)
    path = f"/portal/webhooks/{endpoint['id']}/edit"
    form = await client.get(path)
    assert 'value="https://shop.example/hook"' in form.text
    fields = [("csrf_token", form.token), ("url", "ftp://shop.example"), ("events", "x.y")]
    refused = await client.post(path, fields)
    assert refused.status == 422
    assert 'id="url-error"' in refused.text and 'id="events-error"' in refused.text
    fields = [
        ("csrf_token", form.token),
        ("url", "https://shop.example/v2"),
        ("description", "orders"),
        ("events", "payment.succeeded"),
        ("events", "refund.succeeded"),
    ]
    saved = await client.post(path, fields)
    assert saved.status == 200 and "Endpoint saved" in saved.text, saved.text
    status, read = await api.call("GET", f"/v1/webhook_endpoints/{endpoint['id']}")
    assert status == 200 and isinstance(read, dict)
    assert (read["url"], read["description"]) == ("https://shop.example/v2", "orders")
    assert read["events"] == ["payment.succeeded", "refund.succeeded"]


async def test_notification_addresses_are_the_scopes(
    api: Api, service: Running, browsers: list[Dashboard]
) -> None:
    client = await opened(service.base_url, (await portal_link(api))["url"], browsers)
    page = await client.get("/portal/notifications")
    saved = await client.post(
        "/portal/notifications", {"csrf_token": page.token, "emails": "ops@shop.example"}
    )
    assert saved.status == 200 and "Saved." in saved.text
    status, body = await api.call("GET", "/v1/notification_settings")
    assert status == 200 and isinstance(body, dict) and body["emails"] == ["ops@shop.example"]


KEY = re.compile(r"svc_(test|live)_")
FORBIDDEN = ('"/dashboard', "api_key", "API key", "Payments", "Balance", "Payout", "Sign out")


def _links(text: str) -> set[str]:
    return {link for link in re.findall(r'(?:href|action|data-src)="([^"]+)"', text)}


async def test_no_portal_page_shows_keys_money_or_another_organisation(
    make_api: Any, service: Running, browsers: list[Dashboard]
) -> None:
    api: Api = await make_api(org="acme")
    other: Api = await make_api(org="globex")
    mine = await api.endpoint("https://acme.example/hook", ["payment.succeeded"])
    theirs = await other.endpoint("https://globex.example/hook", ["payment.succeeded"])
    status, _ = await other.call("POST", f"/v1/webhook_endpoints/{theirs['id']}/test")
    assert status == 202
    status, _ = await api.call("POST", f"/v1/webhook_endpoints/{mine['id']}/test")
    assert status == 202
    client = await opened(service.base_url, (await portal_link(api))["url"], browsers)

    seen: dict[str, str] = {}
    todo = ["/portal/webhooks", "/portal/events"]
    while todo:  # every page the portal links to, forms' targets read as pages where GET
        path = todo.pop()
        if path in seen or not path.startswith("/portal/") or "/static/" in path:
            continue
        page = await client.get(path)
        seen[path] = page.text
        if page.status == 405:
            continue
        assert page.status == 200, (path, page.status)
        todo.extend(link.replace("&amp;", "&") for link in _links(page.text))
    assert any(p.startswith("/portal/events/evt_") for p in seen), sorted(seen)
    assert f"/portal/webhooks/{mine['id']}" in seen
    assert all(f'id="{name}"' in seen["/portal/catalogue"] for name in EVENT_TYPES)
    assert "/portal/notifications" in seen
    for path, text in seen.items():
        assert not KEY.search(text), path
        shown = [text[text.index(word) - 60 :][:120] for word in FORBIDDEN if word in text]
        assert not shown, (path, shown)
        for found in (str(theirs["id"]), "globex", api.key, other.key):
            assert found not in text, (path, found)
    for path in (f"/portal/webhooks/{theirs['id']}", f"/portal/webhooks/{theirs['id']}/delete"):
        assert (await client.get(path)).status == 404
    for gone in ("/portal/api_keys", "/portal/payments", "/portal/developer", "/portal/login"):
        assert (await client.get(gone)).status == 404, gone


async def test_revoking_the_key_ends_its_links_and_sessions(
    service: Running, ctx: Context, make_api: Any, browsers: list[Dashboard]
) -> None:
    admin: Api = await make_api()
    status, made = await admin.call(
        "POST", "/v1/api_keys", json={"name": "platform", "permissions": ["portal:write"]}
    )
    assert status == 201 and isinstance(made, dict), made
    platform = Api(admin.session, made["secret"])
    client = await opened(service.base_url, (await portal_link(platform))["url"], browsers)
    unopened = await portal_link(platform)
    assert (await client.get("/portal/webhooks")).status == 200

    status, _ = await admin.call("DELETE", f"/v1/api_keys/{made['id']}")
    assert status == 200
    page = await client.get("/portal/webhooks")
    assert page.status == 401 and "session has ended" in page.text
    late = Dashboard(service.base_url)
    browsers.append(late)
    refused = await late.get(unopened["url"].removeprefix(service.base_url))
    assert refused.status == 403
