"""The dashboard's pages over HTTP: scope, pagination with the API's cursors, payments with
their events, the event list and an event's page, terminals, endpoint creation, and the
accessibility smoke check."""

from __future__ import annotations

import html
import re
import time
from urllib.parse import quote

import orjson
import pytest

from svc.context import Context
from svc.envelope import Event, new_event
from svc.events.model import Attempt
from svc.ids import new_id
from svc.orgs import Scope
from tests.conftest import Running
from tests.dashboard.a11y import problems
from tests.dashboard.conftest import Dashboard, MakeDashboard, paid_payment

pytestmark = pytest.mark.roles("api")
HOOK = "https://hooks.example.com/svc"


async def _endpoint(ctx: Context, scope: Scope, url: str = HOOK) -> str:
    from svc.webhooks import flow

    async with ctx.unit() as unit:
        endpoint = await flow.create(ctx, unit, scope, url, ["payment.succeeded"], "")
    return endpoint.id


async def _scope(ctx: Context, key: str) -> Scope:
    scope = await ctx.api_keys.resolve(key)
    assert scope is not None
    return scope


async def test_another_scopes_endpoint_is_a_404_page(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    acme, acme_key = await make_dashboard(env="test", org="acme")
    other, _ = await make_dashboard(env="test", org="other")
    acme_live, _ = await make_dashboard(env="live", org="acme")
    endpoint_id = await _endpoint(ctx, await _scope(ctx, acme_key))
    assert (await acme.get(f"/dashboard/webhooks/{endpoint_id}")).status == 200
    for outsider in (other, acme_live):
        page = await outsider.get(f"/dashboard/webhooks/{endpoint_id}")
        assert page.status == 404 and "<h1>Not found</h1>" in page.text
        assert HOOK not in page.text
        for action in ("test", "delete"):
            token = (await outsider.get("/dashboard/webhooks")).token
            posted = await outsider.post(
                f"/dashboard/webhooks/{endpoint_id}/{action}", {"csrf_token": token}
            )
            assert posted.status == 404
    assert (await acme.get(f"/dashboard/webhooks/{endpoint_id}")).status == 200
    assert (await acme.get("/dashboard/webhooks/we_nonsense")).status == 404


async def test_endpoints_are_paged_with_the_apis_cursors(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, key = await make_dashboard()
    scope = await _scope(ctx, key)
    ids = [await _endpoint(ctx, scope, f"{HOOK}/{n}") for n in range(27)]
    first = await dashboard.get("/dashboard/webhooks")
    shown = re.findall(r'href="/dashboard/webhooks/(we_\w+)"', first.text)
    assert shown == list(reversed(ids))[:25]
    cursor = re.search(r'href="/dashboard/webhooks\?cursor=([^"]+)" rel="next"', first.text)
    assert cursor is not None
    _, api_cursor = await ctx.endpoints.page(scope, 25, None)
    assert cursor.group(1) == quote(api_cursor or "")
    second = await dashboard.get(f"/dashboard/webhooks?cursor={cursor.group(1)}")
    assert re.findall(r'href="/dashboard/webhooks/(we_\w+)"', second.text) == ids[1::-1]
    assert 'rel="next"' not in second.text and "First page" in second.text
    assert (await dashboard.get("/dashboard/webhooks?cursor=bogus")).status == 400


async def test_creating_an_endpoint_shows_its_secret_once(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, key = await make_dashboard()
    form = await dashboard.get("/dashboard/webhooks/new")
    bad = await dashboard.post(
        "/dashboard/webhooks", {"csrf_token": form.token, "url": "ftp://x", "events": "nope"}
    )
    assert bad.status == 422 and "http://" in bad.text and "not an event type" in bad.text
    created = await dashboard.post(
        "/dashboard/webhooks",
        {"csrf_token": form.token, "url": HOOK, "events": "payment.succeeded"},
    )
    assert created.status == 201
    secret = re.search(r'<code id="secret">(whsec_[^<]+)</code>', created.text)
    assert secret is not None
    (endpoint,) = await ctx.endpoints.in_scope(*_pair(await _scope(ctx, key)))
    assert endpoint.secret == secret.group(1) and endpoint.events == ("payment.succeeded",)
    for path in ("/dashboard/webhooks", f"/dashboard/webhooks/{endpoint.id}"):
        assert secret.group(1) not in (await dashboard.get(path)).text


def _pair(scope: Scope) -> tuple[str, str]:
    return scope.org, scope.env


async def test_payments_list_and_a_payment_with_its_events(
    make_dashboard: MakeDashboard, service: Running
) -> None:
    dashboard, key = await make_dashboard()
    payment_id = await paid_payment(service, key, 2450)
    listed = await dashboard.get("/dashboard/payments")
    assert f'href="/dashboard/payments/{payment_id}"' in listed.text
    assert "CHF 24.50" in listed.text and "succeeded" in listed.text
    page = await dashboard.get(f"/dashboard/payments/{payment_id}")
    types = re.findall(r"<td>(payment\.\w+)</td>", page.text)
    assert types == ["payment.created", "payment.authorized", "payment.succeeded"]
    other, _ = await make_dashboard(org="other")
    assert (await other.get(f"/dashboard/payments/{payment_id}")).status == 404
    first = re.search(r'action="(/dashboard/payments/[^"]+/resend)"', page.text)
    assert first is not None
    resent = await dashboard.post(first.group(1), {"csrf_token": page.token}, follow=False)
    assert resent.status == 303
    assert resent.headers["Location"] == f"/dashboard/payments/{payment_id}?notice=resent"


async def test_deleting_an_endpoint_asks_first(make_dashboard: MakeDashboard, ctx: Context) -> None:
    dashboard, key = await make_dashboard()
    scope = await _scope(ctx, key)
    endpoint_id = await _endpoint(ctx, scope)
    page = await dashboard.get(f"/dashboard/webhooks/{endpoint_id}/delete")
    assert page.status == 200 and HOOK in page.text
    assert await ctx.endpoints.get(scope, endpoint_id) is not None
    done = await dashboard.post(
        f"/dashboard/webhooks/{endpoint_id}/delete", {"csrf_token": page.token}
    )
    assert done.status == 200 and "Endpoint deleted." in done.text and HOOK not in done.text
    assert await ctx.endpoints.get(scope, endpoint_id) is None
    assert (await dashboard.get(f"/dashboard/webhooks/{endpoint_id}")).status == 404


async def test_terminals_show_their_status(make_dashboard: MakeDashboard) -> None:
    dashboard, _ = await make_dashboard()
    page = await dashboard.get("/dashboard/terminals")
    assert "Simulation terminal" in page.text
    assert re.search(r'class="presence presence-online">online<', page.text)


async def _log_one_attempt(
    ctx: Context, endpoint_id: str, event_id: str | None = None, response_body: str = ""
) -> None:
    now = int(time.time() * 1000)
    attempt = Attempt(
        id=new_id("att"),
        event_id=event_id or new_id("evt"),
        event_type="payment.succeeded",
        endpoint_id=endpoint_id,
        attempt=1,
        trigger="test",
        outcome="http_error",
        status_code=500,
        error=None,
        duration_ms=12.5,
        response_body=response_body,
        attempted_ms=now,
        next_attempt_ms=now + 60_000,
    )
    await ctx.deliveries.record([attempt])


async def _event(ctx: Context, scope: Scope, event_type: str = "payment.succeeded") -> Event:
    data = {"id": new_id("pay"), "object": "payment", "amount": 2450, "rate": 0.1, "zeta": 1}
    event = new_event(event_type, scope.env, data)
    async with ctx.unit() as unit:
        await ctx.events.insert(unit, event, scope.org, outbox=False)
    return event


def _listed(text: str) -> list[str]:
    return re.findall(r'href="/dashboard/events/(evt_\w+)"', text)


async def test_events_are_listed_filtered_by_type_and_paged(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, key = await make_dashboard()
    scope = await _scope(ctx, key)
    made = [(await _event(ctx, scope)).id for _ in range(26)]
    failed = (await _event(ctx, scope, "payment.failed")).id
    other, _ = await make_dashboard(org="other")
    assert _listed((await other.get("/dashboard/events")).text) == []
    developer = await dashboard.get("/dashboard/developer")
    assert 'href="/dashboard/events"' in developer.text
    first = await dashboard.get("/dashboard/events")
    assert '<option value="" selected>all</option>' in first.text
    assert len(_listed(first.text)) == 25 and _listed(first.text)[0] == failed
    cursor = re.search(r'href="/dashboard/events\?cursor=([^"]+)" rel="next"', first.text)
    assert cursor is not None
    second = await dashboard.get(f"/dashboard/events?cursor={cursor.group(1)}")
    assert 'rel="next"' not in second.text and "First page" in second.text
    assert sorted(_listed(first.text) + _listed(second.text)) == sorted([*made, failed])
    only = await dashboard.get("/dashboard/events?type=payment.failed")
    assert _listed(only.text) == [failed]
    assert '<option value="payment.failed" selected>' in only.text
    paged = await dashboard.get("/dashboard/events?type=payment.succeeded")
    cursor = re.search(r'href="/dashboard/events\?([^"]+)" rel="next"', paged.text)
    assert cursor is not None and cursor.group(1).startswith("type=payment.succeeded&amp;cursor=")
    rest = await dashboard.get("/dashboard/events?" + html.unescape(cursor.group(1)))
    assert len(_listed(paged.text)) == 25 and len(_listed(rest.text)) == 1
    assert 'href="/dashboard/events?type=payment.succeeded">First page' in rest.text
    assert failed not in _listed(paged.text) + _listed(rest.text)
    assert (await dashboard.get("/dashboard/events?cursor=bogus")).status == 400


async def test_an_events_page_shows_its_body_attempts_and_resends(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, key = await make_dashboard()
    scope = await _scope(ctx, key)
    event = await _event(ctx, scope)
    endpoint_id = await _endpoint(ctx, scope)
    await _log_one_attempt(ctx, endpoint_id, event.id, "x" * 300)
    page = await dashboard.get(f"/dashboard/events/{event.id}")
    assert page.status == 200
    shown = re.search(r'<pre id="event-body"[^>]*>(.*?)</pre>', page.text, re.S)
    assert shown is not None
    body = html.unescape(shown.group(1))
    assert body == orjson.dumps(orjson.loads(event.body), option=orjson.OPT_INDENT_2).decode()
    assert body.replace(" ", "").replace("\n", "").encode() == event.body
    assert 'data-copy="event-body"' in page.text and "/dashboard/static/copy.js" in page.text
    row = re.search(r'<tr class="delivery outcome-http_error".*?</tr>', page.text, re.S)
    assert row is not None
    assert f"<code>{endpoint_id}</code>" in row.group(0) and ">500<" in row.group(0)
    assert "12 ms" in row.group(0) and "x" * 200 + "</code>" in row.group(0)
    assert "x" * 201 not in row.group(0)
    action = f"/dashboard/events/{event.id}/resend"
    assert f'action="{action}"' in page.text
    resent = await dashboard.post(action, {"csrf_token": page.token}, follow=False)
    assert resent.status == 303
    assert resent.headers["Location"] == f"/dashboard/events/{event.id}?notice=resent"
    for outsider in (await make_dashboard(org="other"), await make_dashboard(env="live")):
        missing = await outsider[0].get(f"/dashboard/events/{event.id}")
        assert missing.status == 404 and "<h1>Not found</h1>" in missing.text
        assert event.id not in missing.text
        token = (await outsider[0].get("/dashboard/webhooks/new")).token
        assert (await outsider[0].post(action, {"csrf_token": token})).status == 404
    assert (await dashboard.get("/dashboard/events/evt_nonsense")).status == 404


async def test_main_pages_pass_the_accessibility_smoke_check(
    make_dashboard: MakeDashboard, ctx: Context, service: Running
) -> None:
    dashboard, key = await make_dashboard()
    scope = await _scope(ctx, key)
    endpoint_id = await _endpoint(ctx, scope)
    await _log_one_attempt(ctx, endpoint_id)
    event_id = (await _event(ctx, scope)).id
    await _log_one_attempt(ctx, endpoint_id, event_id, "ok")
    payment_id = await paid_payment(service, key, 2450)
    paths = [
        "/dashboard/payments",
        f"/dashboard/payments/{payment_id}",
        "/dashboard/terminals",
        "/dashboard/developer",
        "/dashboard/events",
        f"/dashboard/events/{event_id}",
        "/dashboard/webhooks",
        "/dashboard/webhooks/new",
        f"/dashboard/webhooks/{endpoint_id}",
        f"/dashboard/webhooks/{endpoint_id}/delete",
        "/dashboard/api_keys",
        "/dashboard/api_keys/new",
        "/dashboard/nowhere",
    ]
    pages = {path: (await dashboard.get(path)).text for path in paths}
    token = (await dashboard.get("/dashboard/webhooks/new")).token
    for url in ("", HOOK):
        form = {"csrf_token": token, "url": url, "events": "payment.succeeded"}
        posted = await dashboard.post("/dashboard/webhooks", form)
        pages[f"POST webhooks url={url!r}"] = posted.text
    signed_out = Dashboard(dashboard.base_url)
    try:
        pages["/dashboard/login"] = (await signed_out.get("/dashboard/login")).text
    finally:
        await signed_out.session.close()
    assert 'class="delivery' in pages[f"/dashboard/webhooks/{endpoint_id}"]
    assert {path: problems(html) for path, html in pages.items() if problems(html)} == {}


def test_the_check_finds_what_it_looks_for() -> None:
    bad = (
        "<html><head><title>x</title></head><body><h2>a</h2><h1>b</h1><h1>c</h1><h3>d</h3>"
        '<input name="q"><select name="s"></select><button></button><a href="/"></a>'
        '<label for="ok">OK</label><input id="ok" name="ok"><input type="hidden" name="h">'
        "<label>wrapped <input name='w'></label><button aria-label='go'></button></body></html>"
    )
    assert problems(bad) == [
        "<html> has no lang",
        "the first heading is h2, not h1",
        "2 h1 headings",
        "h1 is followed by h3",
        "<input name='q'> has no label",
        "<select name='s'> has no label",
        "<button {}> has no text",
        "<a {'href': '/'}> has no text",
    ]


async def test_a_foreign_events_page_and_resend_keep_its_id_whole(
    make_dashboard: MakeDashboard, ctx: Context
) -> None:
    """A producer's own event id may hold any printable character but ``/``."""
    from svc.events.model import StoredEvent

    dashboard, key = await make_dashboard()
    scope = await _scope(ctx, key)
    odd = "order 7?#x"
    now = int(time.time() * 1000)
    body = orjson.dumps({"id": odd, "type": "payment.succeeded", "data": {"n": 1}})
    event = Event(odd, "payment.succeeded", scope.env, now, body)
    await ctx.events.store_if_absent(StoredEvent(event, scope.org), now)
    path = f"/dashboard/events/{quote(odd, safe='')}"
    page = await dashboard.get(path)
    assert page.status == 200 and html.escape(odd) in page.text
    resent = await dashboard.post(f"{path}/resend", {"csrf_token": page.token}, follow=False)
    assert resent.status == 303
    assert resent.headers["Location"] == f"{path}?notice=resent"
