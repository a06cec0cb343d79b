"""A scenario's verdict, judged from what the client, the receivers and the database saw."""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass, field

from chaos.faults import Fault
from harness.load import Request
from harness.receivers import Receipt, Receiver

DUPLICATE_LIMIT = 0.0025
"""The largest duplicate share a scenario passes with: delivery is at least once, but a fault
must not turn it into a flood of repeats."""


@dataclass(frozen=True, slots=True)
class Shop:
    """A scenario's own organisation: its test key and one endpoint on every receiver."""

    name: str
    org: str
    key: str

    @property
    def path(self) -> str:
        return f"/{self.name}"


@dataclass
class Observed:
    """What happened in one scenario, on the harness's monotonic clock."""

    fault: Fault
    shop: Shop
    started: float
    requests: list[Request] = field(default_factory=list)
    fault_start: float = 0.0
    fault_end: float = 0.0
    stops: list[tuple[float, float]] = field(default_factory=list)
    """``World.stops`` of the fault."""
    deadline: float = 0.0
    """Events arriving later are lost."""

    def left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def during(self) -> list[Request]:
        """The requests first sent while the fault lasted."""
        return [r for r in self.requests if self.fault_start <= r.sent < self.fault_end]


@dataclass
class Records:
    """What the database holds for a scenario's organisation."""

    payments: set[str] = field(default_factory=set)
    doubled_events: int = 0
    """Payments with more than one ``payment.created`` event."""
    bound: dict[str, str] = field(default_factory=dict)
    """Idempotency key → id of the payment in its stored response (keys with a readable one)."""


def percent(fraction: float) -> str:
    return f"{fraction * 100:.2f} %"


@dataclass
class Verdict:
    """One scenario's result, as recorded in the results file."""

    scenario: str
    fault: str
    fault_seconds: float
    requests: int
    accepted: int
    failed_requests: dict[str, int]
    retried_answers: dict[str, int]
    """Every answer but the last of each request (what made the client try again)."""
    delivered: dict[str, int]
    lost: int
    acknowledged_not_stored: int
    unconfirmed_payments: int
    duplicates: int
    doubled_events: int
    double_payments: int
    bad_signatures: int
    recover_s: float | None
    drain_s: float | None
    stop_recover_s: list[float | None] = field(default_factory=list)
    """Per broker node the fault stopped: seconds until deliveries flowed again without it."""
    bad_answers: dict[str, int] = field(default_factory=dict)
    """Answers the service must never give: a 5xx other than 503, a 503 without Retry-After."""
    answer_p99_s: float | None = None
    """p99 of the seconds from a payment's first try to its 201, over those sent in the fault."""
    recovered: bool = False
    role_deaths: dict[str, int] = field(default_factory=dict)
    unexpected_deaths: dict[str, int] = field(default_factory=dict)
    not_ready_after: list[str] = field(default_factory=list)
    checks: dict[str, bool] = field(default_factory=dict)
    """The fault's own requirements (``World.checks``) and whether they held."""
    duplicate_limit: float | None = DUPLICATE_LIMIT
    """None in a smoke run, whose few hundred deliveries cannot measure a share of 0.25 %."""
    duplicate_share: float = 0.0
    """``duplicates`` over the endpoints' first deliveries; derived on construction."""

    def __post_init__(self) -> None:
        deliveries = sum(self.delivered.values())
        self.duplicate_share = self.duplicates / deliveries if deliveries else 0.0

    @property
    def passed(self) -> bool:
        return not self.failures()

    def failures(self) -> list[str]:
        """Why the scenario did not pass, in words (empty when it passed)."""
        reasons = []
        if self.lost:
            reasons.append(f"{self.lost} lost")
        if self.double_payments:
            reasons.append(f"{self.double_payments} double payments")
        if self.acknowledged_not_stored:
            reasons.append(f"{self.acknowledged_not_stored} answered 201 but not stored")
        if (limit := self.duplicate_limit) is not None and self.duplicate_share > limit:
            reasons.append(
                f"duplicates {percent(self.duplicate_share)} of deliveries, above {percent(limit)}"
            )
        reasons += [f"{n} × {kind}" for kind, n in self.bad_answers.items()]
        reasons += [f"check {name} failed" for name, held in self.checks.items() if not held]
        return reasons


def _status(status: int) -> str:
    return "unanswered" if status <= 0 else str(status)


def duplicates(receipts: list[Receipt]) -> int:
    """Deliveries of an event id beyond its first."""
    return sum(n - 1 for n in Counter(r.event_id for r in receipts).values())


def answer_p99(seen: Observed) -> float | None:
    """``Verdict.answer_p99_s``: None when the fault was instantaneous or accepted nothing."""
    times = sorted(r.accepted - r.sent for r in seen.during() if r.accepted is not None)
    return round(times[math.ceil(len(times) * 0.99) - 1], 3) if times else None


def answer_checks(seen: Observed, within: float) -> dict[str, bool]:
    """``Fault.answer_within``'s checks over the payments first sent while the fault lasted."""
    during = seen.during()
    slow = sum(1 for r in during if r.accepted is None or r.accepted - r.sent > within)
    return {
        f"payments_p99_within_{within:g}s": bool(during) and slow <= len(during) / 100,
        "payments_never_5xx": not any(status >= 500 for r in during for status in r.answers),
    }


def reached(
    seen: Observed, arrivals: dict[str, dict[str, float]], healthy: list[str]
) -> list[tuple[float, float]]:
    """Per accepted payment: when it was first sent, and when its event had reached every
    healthy endpoint (``math.inf``: never)."""
    return [
        (r.sent, max(arrivals[name].get(r.payment_id, math.inf) for name in healthy))
        for r in seen.requests
        if r.payment_id is not None
    ]


def flowing_after(flows: list[tuple[float, float]], start: float, sent: float) -> float | None:
    """Seconds from ``start`` until a payment first sent at ``sent`` or later had reached every
    healthy endpoint (deliveries flow again), or None when none did."""
    first = min((at for when, at in flows if when >= sent), default=math.inf)
    return None if first == math.inf else round(first - start, 2)


def drained(flows: list[tuple[float, float]], end: float) -> float | None:
    """Seconds from ``end`` until every payment sent before it had reached every healthy
    endpoint, or None when one never did."""
    last = max((at for when, at in flows if when < end), default=math.inf)
    return None if last == math.inf else round(max(0.0, last - end), 2)


def bad_answers(seen: Observed) -> dict[str, int]:
    """``Verdict.bad_answers``, by kind."""
    found = Counter(
        str(status) for r in seen.requests for status in r.answers if 500 <= status != 503
    )
    if unhinted := sum(r.unhinted for r in seen.requests):
        found["503 without Retry-After"] = unhinted
    return dict(sorted(found.items()))


def _doubled(seen: Observed, records: Records) -> set[str]:
    """Payments beyond one per key: ones no key is bound to, and ones a client was given
    although its key is bound to another payment."""
    extra = records.payments - set(records.bound.values())
    for request in seen.requests:
        bound = records.bound.get(request.key)
        if request.payment_id is not None and bound is not None and bound != request.payment_id:
            extra.add(request.payment_id)
    return extra


def judge(
    seen: Observed, records: Records, receivers: list[Receiver], healthy: list[str]
) -> Verdict:
    """The verdict of one scenario; what the role processes did is added by the caller."""
    path = seen.shop.path
    receipts = {r.name: r.endpoints[path].receipts for r in receivers}
    arrivals = {  # payment id → its event's first arrival by the deadline (reversed: first wins)
        name: {r.payment_id: r.at for r in reversed(got) if r.at <= seen.deadline}
        for name, got in receipts.items()
    }
    accepted = {r.payment_id for r in seen.requests if r.payment_id is not None}
    expected = accepted | records.payments
    lost = set().union(*(expected - set(arrived) for arrived in arrivals.values()))
    failed = Counter(_status(r.status) for r in seen.requests if r.payment_id is None)
    retried = Counter(_status(a) for r in seen.requests for a in r.answers[:-1])
    flows = reached(seen, arrivals, healthy)
    return Verdict(
        scenario=seen.fault.name,
        fault=seen.fault.title,
        fault_seconds=round(seen.fault_end - seen.fault_start, 1),
        requests=len(seen.requests),
        accepted=len(accepted),
        failed_requests=dict(sorted(failed.items())),
        retried_answers=dict(sorted(retried.items())),
        delivered={
            name: len({r.event_id for r in got if r.at <= seen.deadline})
            for name, got in receipts.items()
        },
        lost=len(lost),
        acknowledged_not_stored=len(accepted - records.payments),
        unconfirmed_payments=len(records.payments - accepted),
        duplicates=sum(duplicates(got) for got in receipts.values()),
        doubled_events=records.doubled_events,
        double_payments=len(_doubled(seen, records)),
        bad_signatures=sum(r.endpoints[path].bad_signatures for r in receivers),
        recover_s=flowing_after(flows, seen.fault_end, seen.fault_end),
        drain_s=drained(flows, seen.fault_end),
        stop_recover_s=[flowing_after(flows, asked, gone) for asked, gone in seen.stops],
        bad_answers=bad_answers(seen),
        answer_p99_s=answer_p99(seen),
    )
