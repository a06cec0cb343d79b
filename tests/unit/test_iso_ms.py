"""Times in API bodies and event envelopes: ISO 8601 UTC with milliseconds."""

from __future__ import annotations

from datetime import UTC, datetime

from svc.envelope import iso_ms


def test_iso_ms_is_the_utc_time_with_milliseconds_and_z() -> None:
    assert iso_ms(0) == "1970-01-01T00:00:00.000Z"
    assert iso_ms(1_795_651_200_123) == "2026-11-26T00:00:00.123Z"
    for ms in (951_782_400_999, 1_709_164_799_001, 4_102_444_799_999):  # leap days, 2099
        expected = datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.")
        assert iso_ms(ms) == f"{expected}{ms % 1000:03d}Z"
