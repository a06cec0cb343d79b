"""A scenario's numbers: what was accepted, delivered, lost, duplicated or doubled, and how
long the service took to recover. Pure: everything is read from what was observed."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from chaos.records import Records
from chaos.scenario import Observed
from harness.receivers import Receipt, Receiver

DUPLICATE_LIMIT = 0.0025
"""The largest ``Verdict.duplicate_share`` a scenario passes with (0.25 %): delivery is at
least once, but a fault must not turn it into a flood of repeats."""


def duplicate_share(duplicates: int, delivered: dict[str, int]) -> float:
    """``duplicates`` as a fraction of the first deliveries summed over the endpoints
    (``delivered``); 0 when there were none."""
    deliveries = sum(delivered.values())
    return duplicates / deliveries if deliveries else 0.0


def percent(fraction: float) -> str:
    """A fraction in percent with two decimals: ``0.0041`` → ``0.41 %``."""
    return f"{fraction * 100:.2f} %"


@dataclass
class Verdict:
    """One scenario's result, as recorded in the results file."""

    scenario: str
    fault: str
    fault_seconds: float
    requests: int
    accepted: int
    replayed: int
    failed_requests: dict[str, int]
    retried_answers: dict[str, int]
    """Every answer but the last of each request (what made the client try again)."""
    delivered: dict[str, int]
    lost: int
    lost_pairs: int
    acknowledged_not_stored: int
    unconfirmed_payments: int
    duplicates: int
    doubled_events: int
    double_payments: int
    bad_signatures: int
    recover_s: float | None
    drain_s: float | None
    recovered: bool
    role_deaths: dict[str, int]
    unexpected_deaths: dict[str, int]
    not_ready_before: list[str]
    not_ready_after: list[str]
    stop_recover_s: list[float | None] = field(default_factory=list)
    """Per broker node the fault stopped: seconds from telling it to stop until a payment
    first sent after it was gone had reached every healthy endpoint (none: never)."""
    bad_answers: dict[str, int] = field(default_factory=dict)
    """Answers the service must never give, by kind: a 5xx other than 503 (an error of its
    own, not an outage), and a 503 without ``Retry-After``."""
    checks: dict[str, bool] = field(default_factory=dict)
    """The fault's own requirements (``World.checks``) and whether they held."""
    notes: dict[str, Any] = field(default_factory=dict)
    """What the fault saw (``World.notes``)."""
    lost_samples: list[dict[str, Any]] = field(default_factory=list)
    log_lines: dict[str, list[str]] = field(default_factory=dict)
    answer_p99_s: float | None = None
    """The 99th percentile of the seconds from a payment's first try to its 201, over the
    payments first sent while the fault lasted (None: the fault was instantaneous, or no
    such payment was accepted)."""
    duplicate_limit: float | None = DUPLICATE_LIMIT
    """The largest duplicate share it passes with; None in a smoke run, whose few hundred
    deliveries cannot measure a share of 0.25 %: reported there, not judged."""
    duplicate_share: float = 0.0
    """``duplicates`` over the endpoints' first deliveries (``delivered``); 0 when nothing was
    delivered. Derived on construction: change ``duplicates`` with ``dataclasses.replace``."""

    def __post_init__(self) -> None:
        self.duplicate_share = duplicate_share(self.duplicates, self.delivered)

    @property
    def passed(self) -> bool:
        """Nothing lost (no accepted payment missing from the database either), nothing
        doubled, duplicates within ``DUPLICATE_LIMIT`` of the deliveries, no answer the
        service must never give, and every check of the fault held."""
        return (
            self.lost == 0
            and self.double_payments == 0
            and self.acknowledged_not_stored == 0
            and not self._too_many_duplicates()
            and not self.bad_answers
            and all(self.checks.values())
        )

    def _too_many_duplicates(self) -> bool:
        limit = self.duplicate_limit
        return limit is not None and self.duplicate_share > limit

    def failures(self) -> list[str]:
        """Why the scenario did not pass, in words (empty when it passed)."""
        reasons = []
        if self.lost:
            reasons.append(f"{self.lost} lost")
        if self.double_payments:
            reasons.append(f"{self.double_payments} double payments")
        if self.acknowledged_not_stored:
            reasons.append(f"{self.acknowledged_not_stored} answered 201 but not stored")
        if self._too_many_duplicates():
            assert self.duplicate_limit is not None
            reasons.append(
                f"duplicates {percent(self.duplicate_share)} of deliveries, "
                f"above {percent(self.duplicate_limit)}"
            )
        reasons += [f"{n} × {kind}" for kind, n in self.bad_answers.items()]
        reasons += [f"check {name} failed" for name, held in self.checks.items() if not held]
        return reasons


def _status(status: int) -> str:
    return "unanswered" if status <= 0 else str(status)


def first_arrivals(receipts: list[Receipt], until: float) -> dict[str, float]:
    """Payment id → when its event first arrived, counting arrivals up to ``until``."""
    first: dict[str, float] = {}
    for receipt in receipts:
        if receipt.at <= until and receipt.payment_id not in first:
            first[receipt.payment_id] = receipt.at
    return first


def duplicates(receipts: list[Receipt]) -> int:
    """Deliveries of an event id beyond its first."""
    counts = Counter(r.event_id for r in receipts)
    return sum(n - 1 for n in counts.values())


def answer_p99(seen: Observed) -> float | None:
    """``Verdict.answer_p99_s`` of what the client saw."""
    times = sorted(
        r.accepted - r.sent
        for r in seen.requests
        if r.accepted is not None and seen.fault_start <= r.sent < seen.fault_end
    )
    if not times:
        return None
    return round(times[math.ceil(len(times) * 0.99) - 1], 3)


def _everywhere(
    payment: str, arrivals: dict[str, dict[str, float]], names: list[str]
) -> float | None:
    """When ``payment``'s event had reached every endpoint in ``names``, or None."""
    times = [arrivals[name].get(payment) for name in names]
    return None if any(t is None for t in times) else max(t for t in times if t is not None)


def recovery(
    seen: Observed, arrivals: dict[str, dict[str, float]], healthy: list[str]
) -> tuple[float | None, float | None]:
    """Seconds from the fault's end until a payment first sent after it reached every healthy
    endpoint (deliveries flow again), and until every payment sent before it had (drained)."""
    after: list[float] = []
    before: list[float | None] = []
    for request in seen.requests:
        if request.payment_id is None:
            continue
        at = _everywhere(request.payment_id, arrivals, healthy)
        if request.sent >= seen.fault_end:
            if at is not None:
                after.append(at)
        else:
            before.append(at)
    recover = round(min(after) - seen.fault_end, 2) if after else None
    drained = None
    if before and all(t is not None for t in before):
        drained = round(max(0.0, max(t for t in before if t is not None) - seen.fault_end), 2)
    return recover, drained


def flow_after_stops(
    seen: Observed, arrivals: dict[str, dict[str, float]], healthy: list[str]
) -> list[float | None]:
    """For each node stop of the fault: seconds from telling the node to stop until a payment
    first sent after it was gone had reached every healthy endpoint (deliveries flow again
    without it), or None when none did."""
    flows: list[float | None] = []
    for asked, gone in seen.stops:
        times = [
            at
            for request in seen.requests
            if request.payment_id is not None and request.sent >= gone
            if (at := _everywhere(request.payment_id, arrivals, healthy)) is not None
        ]
        flows.append(round(min(times) - asked, 2) if times else None)
    return flows


def bad_answers(seen: Observed) -> dict[str, int]:
    """Answers a client must never get, by kind: a 5xx other than 503, a 503 without
    ``Retry-After``."""
    found = Counter(
        str(status) for r in seen.requests for status in r.answers if 500 <= status != 503
    )
    unhinted = sum(r.unhinted for r in seen.requests)
    if unhinted:
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
    """The verdict of one scenario from what the client, the receivers and the database saw."""
    path = seen.shop.path
    receipts = {r.name: r.endpoints[path].receipts for r in receivers}
    arrivals = {name: first_arrivals(got, seen.deadline) for name, got in receipts.items()}
    accepted = {r.payment_id for r in seen.requests if r.payment_id is not None}
    expected = accepted | records.payments
    missing = {name: expected - set(arrived) for name, arrived in arrivals.items()}
    lost = set().union(*missing.values()) if missing else set()
    failed = Counter(_status(r.status) for r in seen.requests if r.payment_id is None)
    retried = Counter(_status(a) for r in seen.requests for a in r.answers[:-1])
    recover, drained = recovery(seen, arrivals, healthy)
    return Verdict(
        scenario=seen.fault.name,
        fault=seen.fault.title,
        answer_p99_s=answer_p99(seen),
        fault_seconds=round(seen.fault_end - seen.fault_start, 1),
        requests=len(seen.requests),
        accepted=len(accepted),
        replayed=sum(1 for r in seen.requests if r.replayed),
        failed_requests=dict(sorted(failed.items())),
        retried_answers=dict(sorted(retried.items())),
        delivered={
            name: len({r.event_id for r in got if r.at <= seen.deadline})
            for name, got in receipts.items()
        },
        lost=len(lost),
        lost_pairs=sum(len(m) for m in missing.values()),
        acknowledged_not_stored=len(accepted - records.payments),
        unconfirmed_payments=len(records.payments - accepted),
        duplicates=sum(duplicates(got) for got in receipts.values()),
        doubled_events=sum(1 for ids in records.created_events.values() if len(ids) > 1),
        double_payments=len(_doubled(seen, records)),
        bad_signatures=sum(r.endpoints[path].bad_signatures for r in receivers),
        recover_s=recover,
        drain_s=drained,
        stop_recover_s=flow_after_stops(seen, arrivals, healthy),
        bad_answers=bad_answers(seen),
        recovered=False,
        role_deaths={},
        unexpected_deaths={},
        not_ready_before=seen.not_ready_before,
        not_ready_after=[],
        lost_samples=[
            {
                "payment_id": p,
                "event_ids": records.created_events.get(p, []),
                "missing_at": sorted(name for name, m in missing.items() if p in m),
            }
            for p in sorted(lost)[:5]
        ],
    )
