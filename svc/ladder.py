"""The retry ladder: which delay follows a failed attempt, and when the retry window closes.

Grammar (``SVC_RETRY_LADDER``): comma-separated items, each either a delay ``D`` used once,
or ``D..T``: delay ``D`` repeated while the next attempt would still be within ``T`` of the
first attempt. Plain items come before ranges; the ``T`` of ranges never decreases; the last
``T`` is the retry window (without ranges, the sum of the delays).
"""

from __future__ import annotations

from dataclasses import dataclass

from svc.durations import format_duration, parse_duration

DEFAULT_LADDER = "1m,5m,30m,1h..24h,6h..72h"


class LadderError(ValueError):
    """The ladder text does not follow the grammar."""


@dataclass(frozen=True, slots=True)
class Step:
    """One ladder item: ``delay_ms`` once, or repeated until ``until_ms`` after the first try."""

    delay_ms: int
    until_ms: int | None = None

    @property
    def queue_suffix(self) -> str:
        """Name part of this step's delay queue; named after the delay so ladders never clash."""
        return f"{self.delay_ms}ms"


@dataclass(frozen=True, slots=True)
class Retry:
    """The decision after a failed attempt: wait ``delay_ms``, then go on at ladder ``step``."""

    delay_ms: int
    step: int


@dataclass(frozen=True, slots=True)
class RetryLadder:
    """A parsed ladder; ``next_retry`` is the whole policy."""

    steps: tuple[Step, ...]
    text: str

    @classmethod
    def parse(cls, text: str) -> RetryLadder:
        """Parse and check ``text``; raises LadderError naming the bad item."""
        items = [item.strip() for item in text.split(",")]
        if not text.strip() or any(not item for item in items):
            raise LadderError("the ladder needs at least one delay and no empty items")
        steps: list[Step] = []
        for item in items:
            steps.append(_parse_item(item))
        _check_order(steps)
        return cls(tuple(steps), ",".join(items))

    @property
    def window_ms(self) -> int:
        """How long after the first attempt retries may still start."""
        last = self.steps[-1]
        if last.until_ms is not None:
            return last.until_ms
        return sum(step.delay_ms for step in self.steps)

    @property
    def delays_ms(self) -> tuple[int, ...]:
        """Distinct delays, one delay queue each."""
        return tuple(sorted({step.delay_ms for step in self.steps}))

    def next_retry(self, step: int, first_attempt_ms: int, now_ms: int) -> Retry | None:
        """After a failure at ``now_ms``, the next retry from ladder position ``step``, or None.

        None means the window is closed: the job is exhausted.
        """
        index = min(max(step, 0), len(self.steps))
        while index < len(self.steps):
            current = self.steps[index]
            next_at = now_ms + current.delay_ms - first_attempt_ms
            if current.until_ms is None:
                return Retry(current.delay_ms, index + 1) if next_at <= self.window_ms else None
            if next_at <= current.until_ms:
                return Retry(current.delay_ms, index)
            index += 1
        return None

    def step_after(self, failures: int) -> int:
        """The ladder position after ``failures`` failed attempts that each failed at once
        (a lower bound: ``next_retry`` walks on from it past steps whose time is over)."""
        step, at_ms = 0, 0
        for _ in range(failures):
            retry = self.next_retry(step, 0, at_ms)
            if retry is None:
                break
            at_ms += retry.delay_ms
            step = retry.step
        return step

    def schedule(self, limit: int = 1000) -> list[int]:
        """Attempt offsets from the first attempt when every attempt fails instantly."""
        times = [0]
        step = 0
        while len(times) < limit:
            retry = self.next_retry(step, 0, times[-1])
            if retry is None:
                break
            times.append(times[-1] + retry.delay_ms)
            step = retry.step
        return times


def _parse_item(item: str) -> Step:
    delay_text, sep, until_text = item.partition("..")
    try:
        delay = parse_duration(delay_text, bare_seconds=False)
        until = parse_duration(until_text, bare_seconds=False) if sep else None
    except ValueError as exc:
        raise LadderError(f"item {item!r}: {exc}") from None
    if delay <= 0:
        raise LadderError(f"item {item!r}: a delay must be positive")
    if until is not None and until < delay:
        raise LadderError(
            f"item {item!r}: the window {format_duration(until)} is shorter "
            f"than the delay {format_duration(delay)}"
        )
    return Step(delay, until)


def _check_order(steps: list[Step]) -> None:
    seen_range = False
    last_until = 0
    for step in steps:
        if step.until_ms is None:
            if seen_range:
                raise LadderError(
                    f"the delay {format_duration(step.delay_ms)} follows a range; "
                    "plain delays come first"
                )
            continue
        if step.until_ms < last_until:
            raise LadderError(
                f"range windows must not decrease ({format_duration(step.until_ms)}"
                f" after {format_duration(last_until)})"
            )
        seen_range = True
        last_until = step.until_ms
