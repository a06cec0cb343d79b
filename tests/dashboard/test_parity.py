"""The API and the dashboard answer alike: the same endpoint or API key input is accepted by
both, or refused by both for the same field and reason; a disabled endpoint refuses a test send
and a recover through either, and takes them again through either once it is enabled."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

import pytest

from svc.context import Context
from svc.envelope import new_event
from svc.orgs import Scope
from tests.conftest import Api
from tests.dashboard.conftest import Dashboard, MakeDashboard

# Private targets refused, as in production: the loopback and private cases need it.
pytestmark = [pytest.mark.roles("api"), pytest.mark.settings(allow_private_targets=False)]
HOOK = "https://hooks.example.com/svc"
FIELD_ERROR = re.compile(r'<p class="field-error" id="(\w+)-error">(.*?)</p>', re.S)


@dataclass(frozen=True)
class Case:
    """Creation input and the first error the API names for it (None: accepted)."""

    name: str
    url: str | None
    events: tuple[str, ...] = ("payment.succeeded",)
    description: str | None = None
    refused: tuple[str, str] | None = None

    def json(self) -> dict[str, object]:
        body: dict[str, object] = {"events": list(self.events)}
        if self.url is not None:
            body["url"] = self.url
        if self.description is not None:
            body["description"] = self.description
        return body

    def form(self, token: str) -> list[tuple[str, str]]:
        fields = [("csrf_token", token)] + [("events", name) for name in self.events]
        if self.url is not None:
            fields.append(("url", self.url))
        if self.description is not None:
            fields.append(("description", self.description))
        return fields


CASES = [
    Case("valid", HOOK),
    Case("valid, described", f"{HOOK}/2", ("payment.created", "refund.succeeded"), "Shop"),
    Case("no URL", None, refused=("url", "required")),
    Case("empty URL", "", refused=("url", "unsupported_scheme")),
    Case("not http", "ftp://hooks.example.com/svc", refused=("url", "unsupported_scheme")),
    Case("no host", "https://", refused=("url", "invalid_url")),
    Case("credentials", "https://me:pw@hooks.example.com/", refused=("url", "invalid_url")),
    Case("surrounding spaces", f"  {HOOK} ", refused=("url", "invalid_url")),
    Case("loopback", "http://127.0.0.1:8080/hook", refused=("url", "private_target")),
    Case("localhost", "http://localhost/hook", refused=("url", "private_target")),
    Case("private", "http://10.1.2.3/hook", refused=("url", "private_target")),
    Case("unknown event", HOOK, ("payment.nope",), refused=("events[0]", "unknown_event_type")),
    Case("no events", HOOK, (), refused=("events", "empty")),
    Case("events twice", HOOK, ("payment.succeeded",) * 2, refused=("events", "duplicate")),
    Case("long description", HOOK, description="x" * 501, refused=("description", "too_long")),
    Case("NUL", HOOK, description="a\x00b", refused=("description", "invalid_character")),
    Case("two bad fields", "ftp://x", ("nope",), refused=("url", "unsupported_scheme")),
]


async def _scope(ctx: Context, api: Api) -> Scope:
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    return scope


def _shown_errors(text: str) -> dict[str, str]:
    """The dashboard form's error under each field."""
    return {field: html.unescape(detail) for field, detail in FIELD_ERROR.findall(text)}


def _named_errors(problem: dict[str, object]) -> dict[str, str]:
    """The API's first error of each field, by the name of the form's field."""
    errors = problem["errors"]
    assert isinstance(errors, list)
    named: dict[str, str] = {}
    for error in errors:
        named.setdefault(error["field"].split("[")[0], error["detail"])
    return named


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
async def test_endpoint_input_is_judged_alike(
    case: Case, api: Api, make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, _ = await make_dashboard()
    scope = await _scope(ctx, api)
    token = (await dashboard.get("/dashboard/webhooks/new")).token
    status, answer = await api.call("POST", "/v1/webhook_endpoints", json=case.json())
    page = await dashboard.post("/dashboard/webhooks", case.form(token))
    assert isinstance(answer, dict)
    if case.refused is None:
        assert (status, page.status) == (201, 201), (answer, _shown_errors(page.text))
        (made, *_), _ = await ctx.endpoints.page(scope, 1, None)
        assert made.id != answer["id"]
        shown = (made.url, list(made.events), made.description)
        assert shown == (answer["url"], answer["events"], answer["description"])
        return
    assert (status, page.status) == (422, 422), answer
    first = answer["errors"][0]
    assert (first["field"], first["code"]) == case.refused
    assert _shown_errors(page.text) == _named_errors(answer)
    assert await ctx.endpoints.in_scope(scope.org, scope.env) == []


async def _notice(dashboard: Dashboard, path: str, form: dict[str, str]) -> str:
    done = await dashboard.post(path, form, follow=False)
    assert done.status == 303, done.text
    return done.headers["Location"].split("notice=")[1]


async def test_a_disabled_endpoint_refuses_sends_through_both(
    api: Api, make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, _ = await make_dashboard()
    endpoint_id = str((await api.endpoint(HOOK, ["payment.succeeded"]))["id"])
    v1, page = f"/v1/webhook_endpoints/{endpoint_id}", f"/dashboard/webhooks/{endpoint_id}"
    token = (await dashboard.get(page)).token
    event = new_event("payment.succeeded", "test", {"id": "pay_parity"})
    async with ctx.unit() as unit:
        await ctx.events.insert(unit, event, (await _scope(ctx, api)).org, outbox=False)
    since = {"since": "2026-01-01T00:00:00Z"}
    resend = f"{page}/events/{event.id}/resend"

    for disabled, refused in ((True, "endpoint_disabled"), (False, None)):
        status, _ = await api.call("PATCH", v1, json={"disabled": disabled})
        assert status == 200
        tested, test_answer = await api.call("POST", f"{v1}/test")
        recovered, recover_answer = await api.call("POST", f"{v1}/recover", json=since)
        if refused is None:
            assert (tested, recovered) == (202, 202)
        else:
            assert (tested, recovered) == (409, 409)
            assert isinstance(test_answer, dict) and isinstance(recover_answer, dict)
            assert test_answer["code"] == recover_answer["code"] == refused
        notices = [
            await _notice(dashboard, f"{page}/test", {"csrf_token": token}),
            await _notice(dashboard, f"{page}/recover", {"csrf_token": token, "hours": "24"}),
            await _notice(dashboard, resend, {"csrf_token": token}),
        ]
        if refused is None:
            assert notices[0] == "test_sent" and notices[2] == "resent"
            assert notices[1] in ("recovering", "nothing_to_recover")
        else:
            assert notices == [refused] * 3


_PERMISSION = ("permissions", "invalid_permission")


@dataclass(frozen=True)
class KeyCase:
    """A new key's input and the first error the API names for it (None: accepted)."""

    name: str
    key_name: str = ""
    permissions: tuple[str, ...] | None = None
    expires_at: str | None = None
    refused: tuple[str, str] | None = None

    def json(self) -> dict[str, object]:
        body: dict[str, object] = {"name": self.key_name}
        body["permissions"] = None if self.permissions is None else list(self.permissions)
        if self.expires_at is not None:
            body["expires_at"] = self.expires_at
        return body

    def form(self, token: str) -> list[tuple[str, str]]:
        access = "full" if self.permissions is None else "restricted"
        fields = [("csrf_token", token), ("name", self.key_name), ("access", access)]
        fields += [("permissions", item) for item in self.permissions or ()]
        return fields + [("expires_at", self.expires_at)] if self.expires_at else fields


KEY_CASES = [
    KeyCase("full access", "Back office"),
    KeyCase("restricted", "Till", ("terminals:write", "payments:read")),
    KeyCase("expiring", expires_at="2099-01-31T00:00:00+01:00"),
    KeyCase("unknown permission", permissions=("payments:delete",), refused=_PERMISSION),
    KeyCase("long name", "x" * 101, refused=("name", "too_long")),
    KeyCase("NUL in the name", "a\x00b", refused=("name", "invalid_character")),
    KeyCase("past", expires_at="2020-01-01T00:00:00Z", refused=("expires_at", "in_the_past")),
    KeyCase("no offset", expires_at="2099-01-01T00:00:00", refused=("expires_at", "invalid_time")),
    KeyCase("not a time", expires_at="soon", refused=("expires_at", "invalid_time")),
]


@pytest.mark.parametrize("case", KEY_CASES, ids=lambda case: case.name)
async def test_key_input_is_judged_alike(
    case: KeyCase, api: Api, make_dashboard: MakeDashboard, ctx: Context
) -> None:
    dashboard, _ = await make_dashboard()
    scope = await _scope(ctx, api)
    token = (await dashboard.get("/dashboard/api_keys/new")).token
    status, answer = await api.call("POST", "/v1/api_keys", json=case.json())
    page = await dashboard.post("/dashboard/api_keys", case.form(token))
    assert isinstance(answer, dict)
    made, _ = await ctx.api_keys.page(scope, 10, None)
    if case.refused is None:
        assert (status, page.status) == (201, 201), (answer, _shown_errors(page.text))
        from_form, from_api = made[0].public(), made[1].public()
        assert from_api["id"] == answer["id"] and from_form["id"] != from_api["id"]
        same = ("name", "permissions", "expires_at")
        assert {k: from_form[k] for k in same} == {k: from_api[k] for k in same}
        return
    assert (status, page.status) == (422, 422), answer
    first = answer["errors"][0]
    assert (first["field"], first["code"]) == case.refused
    assert _shown_errors(page.text) == _named_errors(answer)
    assert len(made) == 2  # the API's key and the dashboard's, nothing new
