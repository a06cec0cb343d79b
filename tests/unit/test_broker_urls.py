"""SVC_AMQP_URL: one URL or one per node, comma-separated; checked at start-up, never echoing
credentials; the nodes tried in turn, quickly within a round and slowly after one."""

from __future__ import annotations

import pytest

from svc.amqp.connections import NEXT_NODE_PAUSE, ROUND_PAUSE, Nodes
from svc.broker_urls import node_name, split_urls
from svc.settings import Settings, SettingsError

A = "amqp://svc:secret-a@rabbit-0.rabbit:5672/payments"
B = "amqps://svc:secret-b@rabbit-1.rabbit:5671/payments"
C = "amqp://other:secret-c@10.0.0.3"


def test_one_url_is_a_list_of_one() -> None:
    assert split_urls(A) == (A,)
    assert Settings().amqp_urls == ("amqp://guest:guest@127.0.0.1:5672/",)


def test_several_urls_keep_their_order_and_own_credentials() -> None:
    assert split_urls(f"{A},{B}, {C} ") == (A, B, C)
    settings = Settings.from_env({"SVC_AMQP_URL": f"{A},{B},{C}"})
    assert settings.amqp_urls == (A, B, C)


def test_a_comma_in_a_password_is_percent_encoded() -> None:
    url = "amqp://svc:pa%2Css@rabbit:5672/"
    assert split_urls(f"{url},{A}") == (url, A)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "the URL is empty"),
        (f"{A},", "URL 2 of 2 is empty"),
        (f"{A},,{B}", "URL 2 of 3 is empty"),
        (f"{A},http://svc:secret-h@rabbit:15672/", "URL 2 of 2 (http://rabbit:15672/) is not an"),
        ("svc:secret@rabbit:5672", "the URL is not an amqp:// or amqps:// URL"),
        (f"{A},amqp://svc:secret-p@rabbit:56720000/", "URL 2 of 2 is not a valid URL"),
        (f"{A},amqp://svc:secret-p@rabbit:port/", "URL 2 of 2 is not a valid URL"),
        ("amqp:///vhost", "the URL has no host"),
    ],
)
def test_a_bad_part_stops_start_up_naming_the_variable(value: str, message: str) -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env({"SVC_AMQP_URL": value})
    text = str(raised.value)
    assert text.startswith("SVC_AMQP_URL: ")
    assert message in text
    assert "secret" not in text


def test_node_names_leave_credentials_out() -> None:
    assert node_name(A) == "amqp://rabbit-0.rabbit:5672/payments"
    assert node_name(B) == "amqps://rabbit-1.rabbit:5671/payments"
    assert node_name(C) == "amqp://10.0.0.3/"
    assert node_name("amqp://u:p@[::1]:5672/") == "amqp://[::1]:5672/"


def test_nodes_are_tried_in_turn_and_a_failed_round_waits_longer() -> None:
    nodes = Nodes([A, B, C])
    assert nodes.current == A
    assert nodes.failed() == NEXT_NODE_PAUSE and nodes.current == B
    assert nodes.failed() == NEXT_NODE_PAUSE and nodes.current == C
    assert nodes.failed() == ROUND_PAUSE and nodes.current == A  # every node failed in a row
    nodes.connected()
    assert nodes.failed() == NEXT_NODE_PAUSE and nodes.current == B  # lost: a new round
    assert nodes.name == "amqps://rabbit-1.rabbit:5671/payments"


def test_a_single_url_is_retried_after_a_round_pause() -> None:
    nodes = Nodes([A])
    assert nodes.failed() == ROUND_PAUSE and nodes.current == A
    nodes.connected()
    assert nodes.failed() == ROUND_PAUSE and nodes.current == A
