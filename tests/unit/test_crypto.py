"""Secrets at rest: AES-GCM under named keys, bound to their row; key rotation."""

from __future__ import annotations

import pytest

from svc.crypto import SecretBox, SecretKeyError, new_key_text


def test_sealed_secret_opens_only_for_its_row() -> None:
    box = SecretBox.parse(new_key_text("a"))
    key_id, sealed = box.seal(b"whsec_abc", "we_1")
    assert key_id == "a" and b"whsec_abc" not in sealed
    assert box.open(key_id, sealed, "we_1") == b"whsec_abc"
    with pytest.raises(SecretKeyError, match="does not decrypt"):
        box.open(key_id, sealed, "we_2")  # copied onto another row


def test_each_seal_is_different() -> None:
    box = SecretBox.parse(new_key_text("a"))
    assert box.seal(b"same", "x")[1] != box.seal(b"same", "x")[1]


def test_rotation_new_key_first_old_still_decrypts() -> None:
    old, new = new_key_text("old"), new_key_text("new")
    before = SecretBox.parse(old)
    key_id, sealed = before.seal(b"whsec_abc", "we_1")
    after = SecretBox.parse(f"{new},{old}")
    assert after.current == "new"
    assert after.open(key_id, sealed, "we_1") == b"whsec_abc"
    assert after.seal(b"x", "we_1")[0] == "new"
    with pytest.raises(SecretKeyError, match="no key 'old'"):
        SecretBox.parse(new).open(key_id, sealed, "we_1")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "not set"),
        ("  ", "not set"),
        ("nocolon", "KEYID:KEY"),
        ("bad id:AAAA", "KEYID:KEY"),
        ("a:c2hvcnQ", "32 bytes"),
        ("a:!!!!", "32 bytes"),
    ],
)
def test_bad_secret_key_is_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(SecretKeyError, match=message):
        SecretBox.parse(text)


def test_duplicate_key_id_is_refused() -> None:
    key = new_key_text("a")
    with pytest.raises(SecretKeyError, match="twice"):
        SecretBox.parse(f"{key},{key}")
