"""Publishing many messages in one socket write, each confirmed by the broker.

aiormq's ``basic_publish`` sends one message per call: a channel lock, a frame marshalled
and written on its own and a confirmation awaited, per message, which bounds a catch-up of
tens of thousands of events on both sides of the connection. ``publish_confirmed`` marshals
a batch first, then, under the same channel lock, numbers the messages and registers their
confirmations as ``basic_publish`` does (taking the numbers back if the write is cancelled
before it was queued), and hands the frames to the connection in one write: per message,
about a quarter of the publisher's CPU and two thirds of the broker's that a write per
message costs.

``publish_each`` does the same and hands each message's confirm to its own caller: the
publishes of concurrent requests share one write, and a nack or a return fails only the
message it is about (``svc.amqp.publishing`` gathers them).

This module is the one place that writes aiormq's channel state (its lock, confirm numbering,
confirmations, map of message ids for returns and write queue), mirroring what aiormq's own
``basic_publish`` does; ``tests/unit/test_aiormq_pinned.py`` fails when the aiormq code it
mirrors changes, so an upgrade is read against this module first.

Numbering follows the broker's own: a channel in confirm mode counts every publish from 1,
so a batch takes the next tags in order. The confirmations are the channel's futures, so a
channel or connection that closes fails them, and a nack fails its message's with
``aiormq.exceptions.DeliveryError``, as through ``basic_publish``. Messages are mandatory:
one that no queue takes comes back (``PublishError``) instead of vanishing, which is why
each needs a ``message_id`` (the broker's return names no delivery tag).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from typing import Any, NamedTuple

import aiormq
from aiormq.abc import ChannelFrame
from pamqp.body import ContentBody
from pamqp.commands import Basic
from pamqp.header import ContentHeader


class Outgoing(NamedTuple):
    """One message to publish: where it goes, its body and its properties."""

    routing_key: str
    body: bytes
    properties: Basic.Properties


async def publish_confirmed(
    channel: aiormq.Channel, exchange: str, messages: Sequence[Outgoing]
) -> None:
    """Publish ``messages`` to ``exchange`` in one write; return once every one is confirmed.

    Raises as soon as one is refused (``DeliveryError``), comes back unroutable
    (``PublishError``) or the channel is lost; the others may have been routed, so the
    caller treats the whole batch as not published (and publishing again is at-least-once,
    as the events exchange is anyway).
    """
    confirms = await publish_each(channel, exchange, messages)
    try:
        for result in await asyncio.gather(*confirms):
            _check(result)
    finally:
        _drop(confirms)


async def publish_each(
    channel: aiormq.Channel, exchange: str, messages: Sequence[Outgoing]
) -> list[asyncio.Future[Any]]:
    """Publish ``messages`` to ``exchange`` in one write and return each one's confirm, in
    order, for its own caller: ``confirmed`` reads one. A nack or a return fails only its
    own message's; a lost channel fails every one not yet confirmed."""
    if not messages:
        return []
    if not channel.publisher_confirms:
        raise ValueError("publish_confirmed needs a channel in confirm mode")
    ids = [_message_id(message) for message in messages]
    payload = _marshal(channel, exchange, messages)
    returns = channel.message_id_delivery_tag
    async with channel.lock:
        first = channel.delivery_tag + 1
        tags = range(first, first + len(messages))
        confirms = [channel.create_future() for _ in messages]
        for tag, confirm, message_id in zip(tags, confirms, ids, strict=True):
            channel.confirmations[tag] = confirm
            returns[message_id] = tag
        channel.delivery_tag = tags[-1]
        try:
            await channel.write_queue.put(payload)
        except BaseException:  # not sent (cancelled while the write queue was full)
            channel.delivery_tag = first - 1
            for tag in tags:
                channel.confirmations.pop(tag, None)
            for tag, message_id in zip(tags, ids, strict=True):
                _forget(returns, tag, message_id)
            _drop(confirms)
            raise
    for tag, confirm, message_id in zip(tags, confirms, ids, strict=True):
        confirm.add_done_callback(functools.partial(_forgotten, returns, tag, message_id))
    return confirms


async def confirmed(confirm: asyncio.Future[Any]) -> None:
    """Wait for one message's confirm of ``publish_each``; raises as ``publish_confirmed``."""
    _check(await confirm)


def _check(result: Any) -> None:
    if not isinstance(result, Basic.Ack):  # returned, on a channel that does not raise
        raise aiormq.exceptions.PublishError(result, result.delivery)


def _marshal(channel: aiormq.Channel, exchange: str, messages: Sequence[Outgoing]) -> Any:
    """The frames of every message, mandatory, as one ``ChannelFrame`` of the channel."""
    frames: list[Basic.Publish | ContentHeader | ContentBody] = []
    size = channel.max_content_size
    for message in messages:
        body = message.body
        frames.append(
            Basic.Publish(exchange=exchange, routing_key=message.routing_key, mandatory=True)
        )
        frames.append(ContentHeader(properties=message.properties, body_size=len(body)))
        frames.extend(ContentBody(body[at : at + size]) for at in range(0, len(body), size))
    return ChannelFrame.marshall(channel_number=channel.number, frames=frames)


def _message_id(message: Outgoing) -> str:
    message_id = message.properties.message_id
    if not message_id:
        raise ValueError("publish_confirmed needs a message_id on every message")
    return str(message_id)


def _forgotten(returns: dict[str, int], tag: int, message_id: str, _: object) -> None:
    _forget(returns, tag, message_id)


def _forget(returns: dict[str, int], tag: int, message_id: str) -> None:
    """Drop a message's id from the channel's map for returns, unless a later publish of the
    same id took its place."""
    if returns.get(message_id) == tag:
        del returns[message_id]


def _drop(confirms: list[asyncio.Future[Any]]) -> None:
    """Stop waiting for confirms no longer awaited; failures already seen count as read."""
    for confirm in confirms:
        if not confirm.done():
            confirm.cancel()
        elif not confirm.cancelled():
            confirm.exception()  # retrieved, so a second failure is not logged as lost
