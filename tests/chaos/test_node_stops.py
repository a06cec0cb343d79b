"""The per-stop timing of the RabbitMQ cluster scenarios, from what the harness observed: from
telling a node to stop until a payment sent after it was gone reached every healthy endpoint."""

from __future__ import annotations

from chaos.faults import CLUSTER, PLAIN, catalogue
from chaos.report import row
from chaos.verdict import Observed, Shop, Verdict, flowing_after, reached
from harness.load import Request


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
