"""The payout schedule (``SVC_PAYOUT_SCHEDULE``): when the scheduler pays out balances.

``daily`` pays out at the start of every UTC day, ``weekly`` at the start of every Monday
(UTC), a duration such as ``6h`` or ``30s`` at every multiple of it since the Unix epoch, and
``manual`` never (test-environment balances can still be paid out with ``POST /v1/payouts``).
A balance is due once the current period began after its last payout run.
"""

from __future__ import annotations

from dataclasses import dataclass

from svc.durations import parse_duration

DAY_MS = 86_400_000
WEEK_MS = 7 * DAY_MS
MONDAY_OFFSET_MS = 4 * DAY_MS  # 1970-01-01 was a Thursday; Monday 1970-01-05 starts a week
MAX_CHECK_INTERVAL = 60.0
NAMED = {"daily": (DAY_MS, 0), "weekly": (WEEK_MS, MONDAY_OFFSET_MS)}


@dataclass(frozen=True, slots=True)
class PayoutSchedule:
    """Periods of ``period_ms`` starting at ``offset_ms`` past the epoch; none when manual."""

    period_ms: int | None
    offset_ms: int = 0

    @classmethod
    def parse(cls, text: str) -> PayoutSchedule:
        value = text.strip().lower()
        if value == "manual":
            return cls(None)
        if value in NAMED:
            return cls(*NAMED[value])
        try:
            period = parse_duration(value)
        except ValueError:
            raise ValueError(
                f"daily, weekly, manual or a duration such as 6h, not {text!r}"
            ) from None
        if period < 1000:
            raise ValueError("a payout period is at least 1s")
        return cls(period)

    @property
    def automatic(self) -> bool:
        return self.period_ms is not None

    def period_start(self, now_ms: int) -> int:
        """The start of the period ``now_ms`` falls in."""
        if self.period_ms is None:
            raise ValueError("a manual schedule has no periods")
        return now_ms - (now_ms - self.offset_ms) % self.period_ms

    @property
    def check_interval(self) -> float:
        """How often a scheduler looks for due balances, in seconds."""
        if self.period_ms is None:
            return MAX_CHECK_INTERVAL
        return min(MAX_CHECK_INTERVAL, self.period_ms / 1000 / 2)
