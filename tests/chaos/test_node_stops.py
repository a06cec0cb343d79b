"""The per-stop timing of the RabbitMQ cluster scenarios, from what the harness observed: from
telling a node to stop until a payment sent after it was gone reached every healthy endpoint;
each payment timed by its event's first arrival; the node-loss fault's heal."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from chaos.faults import CLUSTER, PLAIN, catalogue
from chaos.report import row
from chaos.verdict import Observed, Records, Shop, Verdict, flowing_after, judge, reached
from harness.load import Request
from harness.receivers import Receipt


def test_each_stop_is_timed_from_the_order_to_the_first_payment_sent_after_it() -> None:
    fault = next(f for f in catalogue() if f.name == "rabbitmq-rolling-restart")
    seen = Observed(fault, Shop("s", "org_x", "key"), started=0.0)
    seen.stops = [(10.0, 13.0), (40.0, 42.0), (70.0, 71.0)]
    seen.requests = [
        Request("a", sent=12.0, payment_id="pay_a"),  # sent before the first node was gone
        Request("b", sent=13.5, payment_id="pay_b"),
        Request("c", sent=14.0, payment_id="pay_c"),
        Request("d", sent=42.5, payment_id="pay_d"),  # arrived at one endpoint only
        Request("e", sent=43.0, payment_id="pay_e"),
        Request("f", sent=71.5),  # never accepted
    ]
    arrivals = {
        "r1": {"pay_a": 12.1, "pay_b": 16.0, "pay_c": 15.0, "pay_d": 43.0, "pay_e": 47.5},
        "r2": {"pay_a": 12.2, "pay_b": 15.5, "pay_c": 15.2, "pay_e": 46.0},
    }
    flows = reached(seen, arrivals, ["r1", "r2"])
    assert [flowing_after(flows, asked, gone) for asked, gone in seen.stops] == [5.2, 7.5, None]


def test_cluster_faults_run_on_the_cluster_and_the_table_shows_each_stop() -> None:
    setups = {f.name: f.setup for f in catalogue()}
    assert setups["rabbitmq-node-loss"] == setups["rabbitmq-rolling-restart"] == CLUSTER
    assert setups["rabbitmq-restart"] == PLAIN
    verdict = Verdict(
        scenario="rabbitmq-rolling-restart", fault="each node restarted", fault_seconds=65.0,
        requests=1, accepted=1, failed_requests={}, retried_answers={},
        delivered={"r1": 1}, lost=0, acknowledged_not_stored=0, unconfirmed_payments=0,
        duplicates=0, doubled_events=0, double_payments=0, bad_signatures=0,
        recover_s=0.0, drain_s=0.0, recovered=True, stop_recover_s=[5.5, 12.0, None],
    )  # fmt: skip
    assert "| 0.0; after each stop: 5.5, 12.0 ⚠, never |" in row(verdict)


def test_a_payment_is_timed_by_its_events_first_arrival_before_the_deadline() -> None:
    fault = next(f for f in catalogue() if f.name == "baseline")
    seen = Observed(fault, Shop("s", "org_x", "key"), started=0.0)
    seen.fault_start, seen.fault_end, seen.deadline = 10.0, 10.0, 60.0
    seen.requests = [Request("a", sent=11.0, payment_id="pay_a")]
    receipts = [Receipt("evt_a", "pay_a", at) for at in (12.0, 20.0, 70.0)]
    endpoint = SimpleNamespace(receipts=receipts, bad_signatures=0)
    receiver = cast(Any, SimpleNamespace(name="r1", endpoints={"/s": endpoint}))
    found = judge(seen, Records({"pay_a"}, bound={"a": "pay_a"}), [receiver], ["r1"])
    assert found.recover_s == 2.0 and found.lost == 0
    endpoint.receipts = receipts[2:]  # only after the deadline
    late = judge(seen, Records({"pay_a"}, bound={"a": "pay_a"}), [receiver], ["r1"])
    assert late.recover_s is None and late.lost == 1


class Node:
    def __init__(self, name: str, running: bool) -> None:
        self.node = name
        self.process = object() if running else None


async def test_node_loss_heals_by_starting_again_only_the_stopped_node() -> None:
    nodes = [Node("a", True), Node("b", False), Node("c", True)]
    started: list[str] = []

    async def start_node(node: Node) -> None:
        started.append(node.node)

    cluster = SimpleNamespace(nodes=nodes, start_node=start_node)
    fault = next(f for f in catalogue() if f.name == "rabbitmq-node-loss")
    assert fault.heal is not None
    await fault.heal(cast(Any, SimpleNamespace(cluster=cluster)))
    assert started == ["b"]
