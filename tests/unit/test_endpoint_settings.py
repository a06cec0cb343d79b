"""An endpoint's signing secrets over a rotation, its API view, and the input rules of the
endpoint operations."""

from __future__ import annotations

from dataclasses import replace

import pytest

from api.input.endpoints import changes, expire_previous_in, new_endpoint, since_ms
from api.problems import InvalidInput
from svc.settings import Settings
from svc.webhooks.model import Endpoint, Options

ENDPOINT = Endpoint(
    id="we_0",
    org="org_0",
    env="test",
    url="https://a.example/",
    events=("payment.created",),
    secret="whsec_new",
    description="",
    created_ms=1_700_000_000_000,
)


def codes(exc: pytest.ExceptionInfo[InvalidInput]) -> list[tuple[str, str]]:
    return [(e.field, e.code) for e in exc.value.errors]


def test_the_previous_secret_signs_until_it_expires_newest_first() -> None:
    rotated = replace(ENDPOINT, previous_secret="whsec_old", previous_secret_expires_ms=5_000)
    assert rotated.signing_secrets(4_999) == ("whsec_new", "whsec_old")
    assert rotated.signing_secrets(5_000) == ("whsec_new",)
    assert ENDPOINT.signing_secrets(0) == ("whsec_new",)


def test_the_view_shows_settings_and_expiry_but_no_secret() -> None:
    rotated = replace(ENDPOINT, previous_secret="whsec_old", previous_secret_expires_ms=0)
    view = rotated.public()
    assert "whsec_new" not in str(view) and "whsec_old" not in str(view)
    assert view["previous_secret_expires_at"] == "1970-01-01T00:00:00.000Z"
    assert (view["signature_scheme"], view["rate_limit"], view["ordered"]) == ("svc", None, False)
    assert (view["disabled"], view["disabled_reason"]) == (False, None)
    assert ENDPOINT.public()["previous_secret_expires_at"] is None


def test_creation_defaults_and_settings() -> None:
    base = {"url": "https://a.example/", "events": ["payment.created"]}
    assert new_endpoint(base, allow_private=False).options == Options()
    body = {**base, "rate_limit": 3, "ordered": True, "signature_scheme": "standard-webhooks"}
    assert new_endpoint(body, allow_private=False).options == Options(
        signature_scheme="standard-webhooks", rate_limit=3, ordered=True
    )


def test_changes_hold_only_what_was_sent() -> None:
    standard = replace(ENDPOINT, secret="whsec_" + "A" * 32)
    assert changes({}, ENDPOINT, allow_private=False) == {}
    assert changes({"rate_limit": None, "description": None}, ENDPOINT, False) == {
        "rate_limit": None,
        "description": "",
    }
    assert changes({"signature_scheme": "standard-webhooks"}, standard, False) == {
        "signature_scheme": "standard-webhooks"
    }
    with pytest.raises(InvalidInput) as refused:
        legacy = replace(ENDPOINT, secret="whsec_Ab-_Cd")  # URL-safe, from before the scheme
        changes({"signature_scheme": "standard-webhooks"}, legacy, False)
    assert codes(refused) == [("signature_scheme", "rotation_needed")]
    far = 2**42  # the legacy secret replaced by a rotation, still signing
    rotated = replace(standard, previous_secret=legacy.secret, previous_secret_expires_ms=far)
    with pytest.raises(InvalidInput):
        changes({"signature_scheme": "standard-webhooks"}, rotated, False)


def test_expire_previous_in_defaults_to_a_day() -> None:
    assert expire_previous_in({}) == 86_400
    assert expire_previous_in({"expire_previous_in": None}) == 86_400
    assert expire_previous_in({"expire_previous_in": 0}) == 0


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("2026-11-21T08:00:00Z", 1_795_248_000_000),
        ("2026-11-21T09:00:00.250+01:00", 1_795_248_000_250),
        ("1900-01-01T00:00:00Z", 0),
        ("9999-12-31T23:59:59-10:00", 253_402_300_799_000),
    ],
)
def test_since_is_an_iso_time_with_offset(text: str, ms: int) -> None:
    assert since_ms({"since": text}) == ms


@pytest.mark.parametrize("text", ["2026-11-21T08:00:00", "2026-11-21", "now", ""])
def test_since_without_offset_or_date_is_refused(text: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        since_ms({"since": text})
    assert codes(refused) == [("since", "invalid_time")]


def test_disable_after_defaults_to_five_days_and_reads_durations() -> None:
    assert Settings().endpoint_disable_after == 5 * 86_400
    env = {"SVC_ENDPOINT_DISABLE_AFTER": "36h"}
    assert Settings.from_env(env).endpoint_disable_after == 36 * 3600
