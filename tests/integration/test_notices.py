"""Email notices: notification addresses through the API, and failing, disabled and
exhausted notices mailed by the scheduler to a real SMTP server (aiosmtpd) started here, one
per endpoint and kind per episode, retried while the server is away."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from dataclasses import replace
from email import message_from_bytes, policy
from email.message import EmailMessage
from email.utils import parsedate_to_datetime
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from harness.ports import free_port
from scheduler.endpoint_health import check_health
from scheduler.notices import mail_due
from svc.context import Context
from svc.db.times import to_dt
from svc.envelope import new_event
from svc.events.model import Attempt
from svc.ids import new_id
from svc.notices.flow import record_attempts
from svc.settings import Settings
from tests.conftest import Api

HOOK = "https://hooks.example.com/svc"
SENDER = "Payments <notices@pay.example>"
DASHBOARD = "https://dash.pay.example/dashboard"
MINUTE = 60_000
NO_SCHEDULER = pytest.mark.roles("api", "dispatcher")
"""For tests that mail the due notices themselves, with no scheduler doing it meanwhile."""
HOUR = 60 * MINUTE


class Inbox:
    """An aiosmtpd handler keeping each message it was given."""

    def __init__(self) -> None:
        self.mails: list[tuple[str, list[str], EmailMessage]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        message = message_from_bytes(envelope.content, policy=policy.default)
        assert isinstance(message, EmailMessage)
        self.mails.append((envelope.mail_from, list(envelope.rcpt_tos), message))
        return "250 OK"


@pytest.fixture
def smtp_port() -> int:
    return free_port()


@pytest.fixture
def settings(settings: Settings, smtp_port: int) -> Settings:
    return replace(
        settings,
        smtp_host="127.0.0.1",
        smtp_port=smtp_port,
        smtp_starttls=False,
        smtp_from=SENDER,
        dashboard_url=DASHBOARD,
        endpoint_failing_after=3600.0,
        endpoint_disable_after=6 * 3600.0,
    )


@pytest.fixture
def inbox(smtp_port: int) -> Iterator[Inbox]:
    handler = Inbox()
    controller = Controller(handler, hostname="127.0.0.1", port=smtp_port)
    controller.start()
    try:
        yield handler
    finally:
        controller.stop()


def now_ms() -> int:
    return int(time.time() * 1000)


def attempt(endpoint_id: str, at_ms: int, outcome: str = "timeout", last: bool = False) -> Attempt:
    event = new_event("payment.created", "test", {"id": new_id("pay")})
    return Attempt(
        new_id("att"), event.id, event.type, endpoint_id, 1, "initial", outcome,
        204 if outcome == "success" else None, None, 12.0, "", at_ms,
        None if last or outcome == "success" else at_ms + MINUTE,
    )  # fmt: skip


async def name_addresses(api: Api, emails: list[str]) -> None:
    status, body = await api.call("PUT", "/v1/notification_settings", json={"emails": emails})
    assert status == 200, body


@NO_SCHEDULER
async def test_notification_settings_are_named_read_checked_and_kept_per_scope(
    api: Api, make_api: Any
) -> None:
    status, body = await api.call("GET", "/v1/notification_settings")
    assert (status, body) == (
        200,
        {
            "object": "notification_settings",
            "environment": "test",
            "emails": [],
            "email_enabled": True,
        },
    )
    await name_addresses(api, ["ops@shop.example", " dev@shop.example"])
    status, body = await api.call("GET", "/v1/notification_settings")
    assert body["emails"] == ["ops@shop.example", "dev@shop.example"]  # type: ignore[index]

    refused = {
        "emails": (None, "required"),
        "x": ({"emails": [], "x": 1}, "unknown_field"),
        "not a list": ({"emails": "ops@shop.example"}, "invalid_type"),
        "too many": ({"emails": [f"o{i}@shop.example" for i in range(11)]}, "too_many"),
        "no address": ({"emails": ["ops@shop.example", "shop.example"]}, "invalid_email"),
        "twice": ({"emails": ["ops@shop.example", "OPS@shop.example"]}, "duplicate"),
    }
    for name, (payload, code) in refused.items():
        status, problem = await api.call(
            "PUT", "/v1/notification_settings", json={} if payload is None else payload
        )
        assert status == 422, name
        assert isinstance(problem, dict)
        assert [e["code"] for e in problem["errors"]] == [code], name
    assert isinstance(problem, dict)
    fields = {e["field"] for e in problem["errors"]}  # the last: the duplicate at index 1
    assert fields == {"emails[1]"}

    # Another organisation, and the owner's other environment, see none of them.
    for other in (await make_api(org="globex"), await make_api(env="live")):
        status, body = await other.call("GET", "/v1/notification_settings")
        assert body["emails"] == []
        await name_addresses(other, ["them@else.example"])
    status, body = await api.call("GET", "/v1/notification_settings")
    assert body["emails"] == ["ops@shop.example", "dev@shop.example"]  # type: ignore[index]

    # Reading takes webhooks:read, naming webhooks:write.
    status, made = await api.call(
        "POST", "/v1/api_keys", json={"name": "ro", "permissions": ["webhooks:read"]}
    )
    assert status == 201, made
    reader = await make_api()
    reader.headers = {"Authorization": f"Bearer {made['secret']}"}  # type: ignore[index]
    assert (await reader.call("GET", "/v1/notification_settings"))[0] == 200
    status, problem = await reader.call("PUT", "/v1/notification_settings", json={"emails": []})
    assert (status, problem["code"]) == (403, "permission_denied")


@NO_SCHEDULER
async def test_failing_disabled_and_exhausted_are_mailed_once_per_episode(
    api: Api, ctx: Context, inbox: Inbox
) -> None:
    await name_addresses(api, ["ops@shop.example", "dev@shop.example"])
    dead = str((await api.endpoint(f"{HOOK}/dead", ["payment.created"]))["id"])
    now = now_ms()
    await ctx.db.execute("UPDATE webhook_endpoints SET created_at = $1", to_dt(now - 20 * HOUR))
    await ctx.deliveries.record([attempt(dead, now - 2 * HOUR), attempt(dead, now - MINUTE)])

    await check_health(ctx, now)
    await check_health(ctx, now + MINUTE)
    for _ in range(3):  # exhausted three times in the episode: one mail
        await record_attempts(ctx, [attempt(dead, now + MINUTE, last=True)])
    assert await mail_due(ctx, now_ms()) == 2
    assert await mail_due(ctx, now_ms()) == 0

    subjects = {}
    for sender, recipients, message in inbox.mails:
        assert sender == "notices@pay.example"
        assert recipients == ["ops@shop.example", "dev@shop.example"]
        assert message["From"] == SENDER
        assert message["To"] == "ops@shop.example, dev@shop.example"
        sent_at = parsedate_to_datetime(message["Date"]).timestamp()
        assert abs(sent_at - time.time()) < 60
        assert re.fullmatch(r"<[^<>@\s]+@pay\.example>", message["Message-ID"])
        text = message.get_content()
        assert f"Endpoint: {dead}" in text and f"URL: {HOOK}/dead" in text
        assert f"{DASHBOARD}/webhooks/{dead}" in text
        subjects[message["Subject"]] = text
    assert set(subjects) == {
        f"Webhook endpoint {dead} is failing",
        f"Deliveries to webhook endpoint {dead} gave up",
    }
    exhausted_text = subjects[f"Deliveries to webhook endpoint {dead} gave up"]
    assert "retries of event evt_" in exhausted_text

    # Disabled by the health check: one more mail naming why.
    await ctx.deliveries.record([attempt(dead, now + 7 * HOUR)])
    await check_health(ctx, now + 7 * HOUR)
    assert await mail_due(ctx, now_ms()) == 1
    _, _, disabled = inbox.mails[-1]
    assert disabled["Subject"] == f"Webhook endpoint {dead} was disabled"
    assert "every delivery attempt failed" in disabled.get_content()

    # Turned on and off by hand: a new episode, so a disabled notice again (reason manual).
    for off in (False, True):
        await api.call("PATCH", f"/v1/webhook_endpoints/{dead}", json={"disabled": off})
    assert await mail_due(ctx, now_ms()) == 1
    assert "turned off by hand" in inbox.mails[-1][2].get_content()


@NO_SCHEDULER
async def test_a_mail_the_server_refuses_is_tried_again_later(
    api: Api, ctx: Context, smtp_port: int
) -> None:
    await name_addresses(api, ["ops@shop.example"])
    endpoint = str((await api.endpoint(f"{HOOK}/off", ["payment.created"]))["id"])
    await api.call("PATCH", f"/v1/webhook_endpoints/{endpoint}", json={"disabled": True})
    at = now_ms()
    assert await mail_due(ctx, at) == 0  # no server listens yet
    row = await ctx.db.fetchrow("SELECT tries, due_at, last_error FROM notices")
    assert row["tries"] == 1 and row["last_error"]
    assert row["due_at"] >= to_dt(at + 29_000)
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=smtp_port)
    controller.start()
    try:
        assert await mail_due(ctx, at + 10_000) == 0  # not due yet
        assert await mail_due(ctx, at + 31_000) == 1
    finally:
        controller.stop()
    assert [m["Subject"] for _, _, m in inbox.mails] == [
        f"Webhook endpoint {endpoint} was disabled"
    ]
    assert await ctx.db.fetchval("SELECT count(*) FROM notices") == 0
    counted = {
        outcome: ctx.metrics.registry.get_sample_value("svc_notices_total", {"outcome": outcome})
        for outcome in ("sent", "retried", "given_up", "unaddressed")
    }
    assert counted == {"sent": 1.0, "retried": 1.0, "given_up": 0.0, "unaddressed": 0.0}


async def test_the_running_scheduler_mails_a_notice(api: Api, inbox: Inbox) -> None:
    await name_addresses(api, ["ops@shop.example"])
    endpoint = str((await api.endpoint(f"{HOOK}/live", ["payment.created"]))["id"])
    await api.call("PATCH", f"/v1/webhook_endpoints/{endpoint}", json={"disabled": True})
    async with asyncio.timeout(15):
        while not inbox.mails:  # noqa: ASYNC110 (the SMTP server runs on a thread of its own)
            await asyncio.sleep(0.1)
    assert inbox.mails[0][2]["Subject"] == f"Webhook endpoint {endpoint} was disabled"
