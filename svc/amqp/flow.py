"""Broker flow control: whether RabbitMQ blocks a connection's publishers now.

While a resource alarm is in effect (memory above ``vm_memory_high_watermark``, free disk below
``disk_free_limit``), RabbitMQ blocks every connection that publishes: it stops reading from its
socket, so the publishes, their confirms and anything else sent on that connection wait until
the alarm clears. A connection that only consumes and acks (each consumer has its own, see
``svc.amqp.consuming``) goes on. The broker blocks a connection at its first publish after the
alarm, and says so with ``connection.blocked``; ``connection.unblocked`` follows when the alarm
clears.

aiormq handles both methods: it keeps the state in the event its ``Connection.ready()`` waits
on, cleared by ``connection.blocked`` and set again by ``connection.unblocked`` (and by a new
connection). aiormq 7 has no public accessor for it, so ``blocked`` reads that event;
``tests/unit/test_flow.py`` fails if aiormq stops keeping it, and
``tests/integration/test_flow_control.py`` checks it against a broker under an alarm.
"""

from __future__ import annotations

import asyncio

from aio_pika.abc import AbstractConnection

UNBLOCKED = "_Connection__connection_unblocked"
"""The name of aiormq's event behind ``Connection.ready()`` (set while not blocked)."""


def unblocked_event(connection: object) -> asyncio.Event | None:
    """aiormq's own record of ``connection.blocked`` and ``connection.unblocked`` on an
    ``aiormq.Connection``; None if it keeps none."""
    event = getattr(connection, UNBLOCKED, None)
    return event if isinstance(event, asyncio.Event) else None


def blocked(connection: AbstractConnection) -> bool:
    """True while the broker blocks ``connection`` (a robust connection between two of its
    connections is not blocked: the next one starts unblocked)."""
    transport = connection.transport
    if transport is None or connection.is_closed:
        return False
    event = unblocked_event(transport.connection)
    return event is not None and not event.is_set()
