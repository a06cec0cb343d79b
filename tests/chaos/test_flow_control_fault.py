"""The broker flow control scenario's measures, without a run: the p99 of payment creation
over the payments sent while the fault lasted, its column in the table, the checks on how
they were answered, and what the memory alarm fault concludes from what it saw."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from chaos.faults import MemoryAlarm, catalogue
from chaos.report import HEADER, row
from chaos.verdict import Observed, Records, Shop, answer_checks, answer_p99, judge
from harness.load import Request
from harness.receivers import Receipt


def observed(*requests: Request) -> Observed:
    fault = next(f for f in catalogue() if f.name == "rabbitmq-flow-control")
    seen = Observed(fault, Shop("flow", "org_1", "key"), started=0.0)
    seen.fault_start, seen.fault_end = 10.0, 30.0
    seen.requests = list(requests)
    return seen


def answered(sent: float, took: float | None) -> Request:
    request = Request(f"k{sent}-{took}", sent)
    if took is not None:
        request.payment_id, request.accepted, request.status = f"pay_{sent}", sent + took, 201
    return request


def test_the_scenario_is_in_the_catalogue_with_a_20_second_alarm() -> None:
    fault = next(f for f in catalogue() if f.name == "rabbitmq-flow-control")
    assert fault.down == 20.0 and fault.heal is not None


def test_p99_counts_only_payments_first_sent_while_the_fault_lasted() -> None:
    during = [answered(10 + i / 10, 0.05) for i in range(99)] + [answered(29.9, 0.9)]
    outside = [answered(5, 8.0), answered(30, 8.0)]
    assert answer_p99(observed(*during, *outside)) == 0.05
    assert answer_p99(observed(*during[:50], answered(20, 3.0), answered(21, 3.0))) == 3.0
    assert answer_p99(observed(answered(20, None), *outside)) is None, "none accepted"


def test_the_table_shows_the_p99() -> None:
    seen = observed(answered(12, 0.25), answered(13, 0.5))
    seen.deadline = 60.0
    receipts = [Receipt(f"evt_{r.sent}", str(r.payment_id), 40.0) for r in seen.requests]
    endpoint = SimpleNamespace(receipts=receipts, bad_signatures=0)
    receiver = cast(Any, SimpleNamespace(name="r1", endpoints={"/flow": endpoint}))
    verdict = judge(seen, Records(), [receiver], ["r1"])
    assert "| p99 answer in fault (s) |" in HEADER
    assert "| 0.50 |" in row(verdict)
    verdict.answer_p99_s = None
    assert "| – |" in row(verdict)


class World:
    def __init__(self) -> None:
        self.checks: dict[str, bool] = {}


def concluded(
    ready: set[str], reported: bool, gauged: bool, unblocked: bool = True
) -> dict[str, bool]:
    """What the alarm records after what it saw of the api."""
    alarm = MemoryAlarm()
    alarm._ready = ready
    alarm._reported = reported
    alarm._gauged = gauged
    world = World()
    alarm._record(cast(Any, world), unblocked)
    return world.checks


def answers(slow: int, failed: int = 0) -> dict[str, bool]:
    """The answer checks over 1,000 payments sent during the alarm, ``slow`` of them answered
    after 1.5 s, ``failed`` first answered 503 then 201, beside slow ones sent before it."""
    during = [answered(10 + i / 100, 1.5 if i < slow else 0.1) for i in range(1000)]
    for request in during[-failed:] if failed else []:
        request.answers = [503, 201]
    fault = next(f for f in catalogue() if f.name == "rabbitmq-flow-control")
    assert fault.answer_within == 1.0
    return answer_checks(observed(*during, answered(5, 9.0)), fault.answer_within)


def test_the_fault_passes_a_service_that_stays_ready_reports_the_block_and_answers_fast() -> None:
    assert concluded({"200"}, reported=True, gauged=True) == {
        "api_ready_while_blocked": True,
        "api_reported_blocked": True,
        "unblocked_after_alarm": True,
    }
    assert answers(slow=10) == {"payments_p99_within_1s": True, "payments_never_5xx": True}


def test_the_fault_fails_an_unready_api_a_silent_block_slow_answers_or_a_lasting_block() -> None:
    assert not concluded({"200", "503"}, True, True)["api_ready_while_blocked"]
    assert not concluded({"200"}, False, True)["api_reported_blocked"]
    assert not concluded({"200"}, True, False)["api_reported_blocked"]
    assert not concluded({"200"}, True, True, unblocked=False)["unblocked_after_alarm"]
    assert not answers(slow=11)["payments_p99_within_1s"]
    assert not answers(slow=0, failed=1)["payments_never_5xx"]
    unanswered = observed(answered(12, None))
    assert not answer_checks(unanswered, 1.0)["payments_p99_within_1s"], "never accepted: slow"
    assert not answer_checks(observed(), 1.0)["payments_p99_within_1s"], "nothing measured"
