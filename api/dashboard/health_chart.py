"""An endpoint's delivery health picture: successes and failures per hour over the last 24
hours, drawn on the server as an inline SVG bar chart (no script), with the success rate in
words beside it. The counts come from the delivery log's hourly aggregate
(``DeliveryLog.hourly``), never from a scan of the log."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from svc.events.model import HOUR_MS, Hour

SLOT = 20
"""Width of one hour's slot; a bar fills most of it."""
BAR = 14
PLOT_HEIGHT = 100
LEFT = 44
"""Room for the scale's labels left of the bars."""
TOP = 8
RIGHT = 16
"""Room for the current hour's label, centred under the last bar."""
BOTTOM = 22
"""Room for the hours' labels under the bars."""


@dataclass(frozen=True, slots=True)
class Bar:
    slot_x: int
    """Where the hour's slot starts (a pale full-height band, the tooltip's target)."""
    x: int
    succeeded_y: float
    succeeded_height: float
    failed_y: float
    failed_height: float
    title: str


@dataclass(frozen=True, slots=True)
class Tick:
    x: int
    label: str


@dataclass(frozen=True, slots=True)
class HealthChart:
    bars: list[Bar]
    ticks: list[Tick]
    width: int
    height: int
    baseline: int
    plot_end: int
    """Where the last hour's slot ends."""
    scale: int
    """The attempts of the busiest hour: the top of the scale."""
    summary: str
    left: int = LEFT
    top: int = TOP
    slot: int = SLOT
    bar: int = BAR


def _hour(start_ms: int) -> str:
    return datetime.fromtimestamp(start_ms / 1000, tz=UTC).strftime("%H:%M")


def _rate(succeeded: int, total: int) -> str:
    """A success rate with one decimal that never rounds a failure away (or up to a success)."""
    tenths = succeeded * 1000 // total
    return f"{tenths // 10}.{tenths % 10} %"


def summary(hours: Sequence[Hour]) -> str:
    succeeded = sum(h.succeeded for h in hours)
    failed = sum(h.failed for h in hours)
    total = succeeded + failed
    period = "hour" if len(hours) == 1 else f"{len(hours)} hours"
    if not total:
        return f"No delivery attempts in the last {period}."
    return (
        f"Last {period}: {_rate(succeeded, total)} of {total:,} attempts succeeded "
        f"({succeeded:,} succeeded, {failed:,} failed)."
    )


def chart(hours: Sequence[Hour]) -> HealthChart:
    """The picture of ``hours`` (oldest first), one bar per hour: successes at the bottom,
    failures stacked on them, scaled to the busiest hour."""
    scale = max((h.succeeded + h.failed for h in hours), default=0)
    per_attempt = PLOT_HEIGHT / scale if scale else 0.0
    baseline = TOP + PLOT_HEIGHT
    bars = []
    for index, hour in enumerate(hours):
        succeeded_height = hour.succeeded * per_attempt
        failed_height = hour.failed * per_attempt
        end = _hour(hour.start_ms + HOUR_MS)
        bars.append(
            Bar(
                slot_x=LEFT + index * SLOT,
                x=LEFT + index * SLOT + (SLOT - BAR) // 2,
                succeeded_y=baseline - succeeded_height,
                succeeded_height=succeeded_height,
                failed_y=baseline - succeeded_height - failed_height,
                failed_height=failed_height,
                title=f"{_hour(hour.start_ms)}–{end} UTC: {hour.succeeded:,} succeeded, "
                f"{hour.failed:,} failed",
            )
        )
    # The first hour, the middle one and the current one are labelled by their start.
    ticks = [
        Tick(LEFT + index * SLOT + SLOT // 2, _hour(hours[index].start_ms))
        for index in sorted({0, len(hours) // 2, len(hours) - 1})
        if hours
    ]
    return HealthChart(
        bars=bars,
        ticks=ticks,
        width=LEFT + len(hours) * SLOT + RIGHT,
        height=baseline + BOTTOM,
        baseline=baseline,
        plot_end=LEFT + len(hours) * SLOT,
        scale=scale,
        summary=summary(hours),
    )
