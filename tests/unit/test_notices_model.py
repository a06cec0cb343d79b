"""The pure rules of notices: addresses, back-off, a notice's mail, and the start-up line when
no mail server is configured."""

from __future__ import annotations

import logging

import pytest

from scheduler.notices import mail_enabled
from svc.notices.model import (
    DISABLED,
    LONGEST_BACKOFF,
    MAX_EMAIL_LENGTH,
    Notice,
    backoff,
    compose,
    valid_email,
)
from svc.settings import Settings


@pytest.mark.parametrize(
    ("address", "valid"),
    [
        ("ops@shop.example", True),
        ("first.last+hooks@mail.shop.example", True),
        ("shop.example", False),
        ("ops@localhost", False),
        ("two@@shop.example", False),
        ("ops @shop.example", False),
        ("<ops@shop.example>", False),
        ("a" * 65 + "@shop.example", False),
        ("o@" + "a" * (MAX_EMAIL_LENGTH) + ".example", False),
    ],
)
def test_addresses(address: str, valid: bool) -> None:
    assert valid_email(address) is valid


def test_backoff_doubles_up_to_an_hour() -> None:
    assert [backoff(n) for n in (1, 2, 3)] == [30.0, 60.0, 120.0]
    assert backoff(40) == LONGEST_BACKOFF


def test_a_disabled_notice_names_the_endpoint_its_url_and_page() -> None:
    notice = Notice(1, "org_1", "live", DISABLED, "we_1", "https://shop.example/h", "manual", 0)
    mail = compose(notice, "svc <n@pay.example>", ["a@shop.example"], "https://dash.example")
    assert (mail["From"], mail["To"]) == ("svc <n@pay.example>", "a@shop.example")
    assert mail["Subject"] == "Webhook endpoint we_1 was disabled"
    text = mail.get_content()
    assert "turned off by hand" in text and "URL: https://shop.example/h" in text
    assert "https://dash.example/webhooks/we_1" in text and "Environment: live" in text


def test_no_mail_server_is_said_at_start_up(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, "scheduler.notices"):
        assert not mail_enabled(Settings())
        assert mail_enabled(Settings(smtp_host="smtp.example"))
    assert "SVC_SMTP_HOST is not set: no email notices" in caplog.records[0].getMessage()
    assert "smtp.example:587" in caplog.records[1].getMessage()
