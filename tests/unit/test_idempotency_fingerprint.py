"""Request fingerprints decide whether a reused idempotency key means the same request."""

from __future__ import annotations

from svc.idempotency import fingerprint


def test_same_parts_same_fingerprint() -> None:
    assert fingerprint("POST", "/v1/payments", b"amount=1") == fingerprint(
        "POST", "/v1/payments", b"amount=1"
    )


def test_any_difference_changes_it() -> None:
    base = fingerprint("POST", "/v1/payments", "form", b"amount=1")
    assert base != fingerprint("POST", "/v1/payments", "form", b"amount=2")
    assert base != fingerprint("POST", "/v1/payments/x", "form", b"amount=1")
    assert base != fingerprint("POST", "/v1/payments", "json", b"amount=1")


def test_parts_cannot_shift_into_each_other() -> None:
    assert fingerprint("ab", "c") != fingerprint("a", "bc")
