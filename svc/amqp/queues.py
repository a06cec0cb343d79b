"""How many messages wait in the namespace's work queues and how many consumers take them.

Each queue is declared passively on a channel opened for the question; a queue that does not
exist (yet) closes it on the broker's side and is left out.
"""

from __future__ import annotations

import contextlib
from typing import NamedTuple

import aio_pika
from aio_pika.abc import AbstractConnection

from svc.amqp.topology import Topology


class QueueDepth(NamedTuple):
    """One queue's name without the namespace, its ready messages and its consumers."""

    name: str
    messages: int
    consumers: int


async def depths(connection: AbstractConnection, topology: Topology) -> list[QueueDepth]:
    """The depth of every work queue of ``topology`` that exists."""
    found = []
    prefix = len(topology.namespace) + 1
    channel = await connection.channel()
    try:
        for name in topology.work_queues():
            with contextlib.suppress(aio_pika.exceptions.ChannelClosed):
                queue = await channel.declare_queue(name, passive=True)
                declared = queue.declaration_result
                found.append(
                    QueueDepth(
                        name[prefix:], declared.message_count or 0, declared.consumer_count or 0
                    )
                )
    finally:
        await channel.close()
    return found
