"""Coalesced acks never settle a message that is still running or going back to its queue."""

from __future__ import annotations

import asyncio
from typing import Any

from svc.amqp.acks import ACK_GATHER, Acks


class Channel:
    def __init__(self) -> None:
        self.frames: list[tuple[str, int, bool]] = []
        self.is_closed = False
        self.stalls: dict[int, float] = {}


class Message:
    """Just what ``Acks`` uses of a ``svc.amqp.received.Received``."""

    def __init__(self, channel: Channel, tag: int) -> None:
        self.channel = channel
        self.delivery_tag = tag

    async def ack(self, multiple: bool = False) -> None:
        # A write can wait for room in the connection's write queue before it is sent.
        await asyncio.sleep(self.channel.stalls.get(self.delivery_tag, 0))
        self.channel.frames.append(("ack", self.delivery_tag, multiple))

    async def reject(self, requeue: bool = False) -> None:
        self.channel.frames.append(("reject", self.delivery_tag, requeue))


def setup(count: int, hold_limit: int = 100) -> tuple[Acks, Channel, list[Any]]:
    acks, channel = Acks(hold_limit), Channel()
    messages = [Message(channel, tag) for tag in range(1, count + 1)]
    for message in messages:
        acks.received(message)  # type: ignore[arg-type]
    return acks, channel, messages


async def turn() -> None:
    """Let the flush and the sender (one ack at a time) run."""
    for _ in range(20):
        await asyncio.sleep(0)


async def test_finished_prefix_is_one_multiple_ack() -> None:
    acks, channel, m = setup(3)
    acks.finished(m[1])
    await turn()
    assert channel.frames == [], "tag 1 still runs, so tag 2 cannot be covered yet"
    acks.finished(m[0])
    await turn()
    assert channel.frames == [("ack", 2, True)]
    acks.finished(m[2])
    await turn()
    assert channel.frames == [("ack", 2, True), ("ack", 3, True)]


async def test_requeued_message_is_rejected_before_any_ack_passes_it() -> None:
    acks, channel, m = setup(3)
    acks.finished(m[1])
    acks.finished(m[2])
    await acks.requeue(m[0])
    await turn()
    assert channel.frames == [("reject", 1, True), ("ack", 3, True)]


async def test_finished_messages_behind_a_slow_one_are_acked_singly_past_the_limit() -> None:
    acks, channel, m = setup(6, hold_limit=3)
    for message in m[1:5]:  # tag 1 hangs; tags 2..5 finish
        acks.finished(message)
    await turn()
    assert sorted(channel.frames) == [("ack", t, False) for t in (2, 3, 4, 5)]
    acks.finished(m[0])
    await turn()
    assert channel.frames[-1] == ("ack", 1, True)  # covers only tag 1: 2..5 are settled


async def test_settle_acks_everything_finished() -> None:
    acks, channel, m = setup(3)
    acks.finished(m[2])
    await acks.settle()
    assert channel.frames == [("ack", 3, False)]


async def test_a_new_channel_starts_afresh() -> None:
    acks, channel, m = setup(2)
    acks.finished(m[1])
    fresh = Channel()
    reopened = Message(fresh, 1)
    acks.received(reopened)  # type: ignore[arg-type]
    acks.finished(m[0])  # from the closed channel: ignored, the broker requeued it
    acks.finished(reopened)  # type: ignore[arg-type]
    await turn()
    assert channel.frames == []
    assert fresh.frames == [("ack", 1, True)]


async def test_acks_reach_the_broker_in_the_order_decided() -> None:
    """A multiple-ack overtaken by a later one would name a tag the broker already settled."""
    acks, channel, m = setup(3)
    channel.stalls[1] = 0.05  # the first ack's write waits for room
    acks.finished(m[0])
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    acks.finished(m[1])
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    acks.finished(m[2])
    await acks.settle()
    assert [tag for _, tag, _ in channel.frames] == [1, 2, 3]


async def test_messages_of_a_closed_channel_are_not_acked() -> None:
    acks, channel, m = setup(2)
    channel.is_closed = True
    acks.finished(m[0])
    await acks.requeue(m[1])
    await acks.settle()
    assert channel.frames == []


async def test_a_message_settled_early_is_acked_once_and_never_rejected() -> None:
    acks, channel, m = setup(2)
    acks.finished(m[0])  # a fan-out handed its slow delivery off and settled the event
    acks.finished(m[0])  # the handler returns later: nothing more
    await turn()
    acks.finished(m[0])
    await acks.requeue(m[0])  # the slow delivery failed afterwards: the event stays acked
    acks.finished(m[1])
    await turn()
    assert channel.frames == [("ack", 1, True), ("ack", 2, True)]


async def test_messages_finished_within_the_gather_share_one_ack() -> None:
    acks, channel = Acks(hold_limit=100, gather=0.05), Channel()
    messages = [Message(channel, tag) for tag in range(1, 4)]
    for message in messages:
        acks.received(message)  # type: ignore[arg-type]
    acks.finished(messages[0])  # type: ignore[arg-type]
    await turn()
    assert channel.frames == [], "the first waits for others to share its ack"
    await asyncio.sleep(0.01)
    acks.finished(messages[1])  # type: ignore[arg-type]
    acks.finished(messages[2])  # type: ignore[arg-type]
    await asyncio.sleep(0.06)
    await turn()
    assert channel.frames == [("ack", 3, True)]


def test_consumers_gather_their_acks() -> None:
    assert Acks.for_prefetch(1000)._gather == ACK_GATHER > 0


async def test_a_message_handed_on_that_fails_goes_back_after_its_pause() -> None:
    acks, channel, m = setup(2)
    acks.fail(m[0], after=0.05)  # the delivery it was handed to failed
    acks.finished(m[1])
    await turn()
    assert channel.frames == [], "tag 1 is going back: nothing may pass over it yet"
    await asyncio.sleep(0.1)
    await turn()
    await acks.settle()
    assert channel.frames[0] == ("reject", 1, True)
    assert ("ack", 2, True) in channel.frames


async def test_stopping_waits_for_messages_handed_on_within_the_grace() -> None:
    acks, _channel, m = setup(2)
    assert acks.unfinished() == 2
    acks.finished(m[0])
    assert acks.unfinished() == 1
    loop = asyncio.get_running_loop()
    loop.call_later(0.1, acks.finished, m[1])
    started = loop.time()
    await acks.handed_back(5)
    assert acks.unfinished() == 0
    assert loop.time() - started < 1
    acks.received(Message(_channel, 3))  # type: ignore[arg-type]
    started = loop.time()
    await acks.handed_back(0.2)  # never finished: the wait ends with the grace
    assert 0.15 < loop.time() - started < 1
