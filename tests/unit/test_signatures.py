"""Delivery headers in both schemes, with a rotated secret signing until it expires."""

from __future__ import annotations

import time

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from dispatcher.sender import retry_after_seconds
from dispatcher.signatures import Signing
from svc.amqp.delivery_jobs import DeliveryJob
from svc.signing import SignatureError, new_signing_secret, standard_key, verify

BODY = b'{"id":"evt_1","type":"payment.succeeded","data":{"amount":2450}}'
JOB = DeliveryJob("evt_1", "payment.succeeded", "org_1", "test", 0, "we_1", BODY)


def test_one_secret_signs_once_in_svc_scheme() -> None:
    secret = new_signing_secret()
    now = time.time()
    headers = Signing("svc", secret).headers(JOB, now)
    assert headers["Svc-Signature"].count("v1=") == 1
    assert verify(headers["Svc-Signature"], BODY, secret, now=now) == int(now)
    assert headers["Svc-Event-Id"] == "evt_1" and headers["Svc-Attempt"] == "1"


def test_a_rotated_secret_signs_beside_the_new_one_until_it_expires() -> None:
    new, old = new_signing_secret(), new_signing_secret()
    now = time.time()
    signing = Signing("svc", new, old, int((now + 60) * 1000))
    header = signing.headers(JOB, now)["Svc-Signature"]
    assert header.count("v1=") == 2
    for secret in (new, old):
        verify(header, BODY, secret, now=now)  # receivers with either secret accept it
    later = signing.headers(JOB, now + 61)["Svc-Signature"]
    assert later.count("v1=") == 1
    verify(later, BODY, new, now=now + 61)
    with pytest.raises(SignatureError):
        verify(later, BODY, old, now=now + 61)


def test_standard_webhooks_mode_verifies_with_the_reference_library() -> None:
    new, old = new_signing_secret(), new_signing_secret()
    now = time.time()
    headers = Signing("standard-webhooks", new, old, int((now + 60) * 1000)).headers(JOB, now)
    assert headers["webhook-id"] == "evt_1" and headers["webhook-timestamp"] == str(int(now))
    assert "Svc-Signature" not in headers
    assert len(headers["webhook-signature"].split(" ")) == 2
    for secret in (new, old):
        assert Webhook(secret).verify(BODY, headers) == {
            "id": "evt_1",
            "type": "payment.succeeded",
            "data": {"amount": 2450},
        }
    with pytest.raises(WebhookVerificationError):
        Webhook(new_signing_secret()).verify(BODY, headers)


def test_a_url_safe_secret_cannot_sign_standard_webhooks() -> None:
    assert standard_key("whsec_abc-def_ghi") is None
    assert standard_key("whsec_") is None
    assert standard_key(new_signing_secret()) is not None
    with pytest.raises(ValueError):
        Signing("standard-webhooks", "whsec_abc-def_ghi")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("120", 120.0),
        (" 0 ", 0.0),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # in the past
        ("soon", None),
        ("-5", None),
    ],
)
def test_retry_after_values(value: str, expected: float | None) -> None:
    assert retry_after_seconds(value, time.time()) == expected


def test_retry_after_as_an_http_date() -> None:
    # Fri, 15 Jan 2027 08:00:00 GMT is 1,800,000,000 s after the epoch.
    assert retry_after_seconds("Fri, 15 Jan 2027 08:00:00 GMT", 1_800_000_000 - 120) == 120
