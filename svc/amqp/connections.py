"""Connections to RabbitMQ, over one node or several: ``SVC_AMQP_URL`` may name every node of a
cluster (see ``svc.broker_urls``), and a process whose node goes away moves to another one by
itself, without a restart.

``Nodes`` holds the URLs and which one is current. Whatever connects takes the current one;
when a connection to it fails or is lost, the next one becomes current, so the next attempt
(a consumer's, or the robust connection's own) goes to another node. A process's main
connection (``connect``) is aio-pika's robust connection, whose channels and declarations are
restored after a reconnect; each consumer holds a plain connection of its own and reconnects
in its own loop, from ``Nodes`` of its own (``svc.amqp.consuming``).

Moving on is quick while there are nodes left to try in a round (``NEXT_NODE_PAUSE``); once
every node failed in a row, the next round waits ``ROUND_PAUSE``. With one URL every failure
ends a round, so a single broker (or a load balancer in front of a cluster) is retried every
``ROUND_PAUSE``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import aio_pika
from aio_pika.abc import AbstractRobustConnection
from aio_pika.exceptions import AMQPConnectionError
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_delay, wait_exponential
from yarl import URL

from svc.broker_urls import node_name

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 10.0
"""Seconds one attempt at one node may take (a node that accepts and then hangs)."""
NEXT_NODE_PAUSE = 0.2
"""Seconds between a failed or lost connection and the attempt at the next node."""
ROUND_PAUSE = 5.0
"""Seconds before trying again once every node failed in a row."""
CONNECT_ERRORS = (OSError, AMQPConnectionError)
"""Errors of an attempt to connect (refused, reset, timed out, refused by the broker)."""


class Nodes:
    """The broker URLs of a process, tried in turn: ``current`` until it fails, then the next."""

    def __init__(self, urls: Sequence[str]) -> None:
        if not urls:
            raise ValueError("no broker URL")
        self.urls = tuple(urls)
        self._index = 0
        self._failures = 0
        """Attempts failed or connections lost in a row, since the last connection made."""

    @property
    def current(self) -> str:
        return self.urls[self._index]

    @property
    def name(self) -> str:
        """The current node, without credentials."""
        return node_name(self.current)

    def connected(self) -> None:
        """A connection to ``current`` is open: a later loss starts a new round."""
        self._failures = 0

    def failed(self) -> float:
        """A connection to ``current`` failed or was lost: the next URL becomes current.
        Returns how long to wait before the next attempt."""
        self._failures += 1
        self._index = (self._index + 1) % len(self.urls)
        return ROUND_PAUSE if self._failures % len(self.urls) == 0 else NEXT_NODE_PAUSE


class NodesConnection(aio_pika.RobustConnection):
    """aio-pika's robust connection, reconnecting to the next node of ``Nodes`` each time."""

    def __init__(self, nodes: Nodes, **kwargs: Any) -> None:
        self.nodes = nodes
        super().__init__(URL(nodes.current), **kwargs)
        self.reconnect_interval = NEXT_NODE_PAUSE
        self._reconnected = False

    def __str__(self) -> str:
        return self.nodes.name

    async def _on_connection_close(self, closing: asyncio.Future[Any]) -> None:
        # Called both when an attempt failed and when an open connection was lost; aio-pika
        # tries again with ``self.url`` after ``self.reconnect_interval``. ``_close_called``
        # (set by close()) is in every aio-pika the floors allow; the ``close_called``
        # property that reads it came later than 9.4.
        if not self._close_called:
            lost = self.nodes.name
            self.reconnect_interval = self.nodes.failed()
            self.url = URL(self.nodes.current)
            if self.connected.is_set():
                log.warning("lost RabbitMQ at %s; connecting to %s", lost, self.nodes.name)
        await super()._on_connection_close(closing)

    async def _on_connected(self) -> None:
        await super()._on_connected()  # restores every channel after a reconnect
        self.nodes.connected()
        self.reconnect_interval = NEXT_NODE_PAUSE
        verb = "reconnected" if self._reconnected else "connected"
        self._reconnected = True
        log.info("%s to RabbitMQ at %s", verb, self.nodes.name)


async def connect(urls: Sequence[str], wait: float = 60.0) -> AbstractRobustConnection:
    """A robust connection to the first node of ``urls`` that answers, trying them all again
    with back-off for up to ``wait`` seconds at start-up."""
    nodes = Nodes(urls)
    async for attempt in AsyncRetrying(
        stop=stop_after_delay(wait),
        wait=wait_exponential(multiplier=0.2, max=5),
        retry=retry_if_exception_type(CONNECT_ERRORS),
        reraise=True,
    ):
        with attempt:
            return await _any_node(nodes)
    raise AssertionError("unreachable")


async def _any_node(nodes: Nodes) -> AbstractRobustConnection:
    """Each node once, from the current one; the last error when none answered."""
    failure: BaseException | None = None
    for _ in nodes.urls:
        name = nodes.name
        connection = NodesConnection(nodes)
        try:
            await connection.connect(timeout=CONNECT_TIMEOUT)
        except CONNECT_ERRORS as exc:  # the failed attempt made the next node current
            failure = exc
            log.warning("cannot connect to RabbitMQ at %s: %s", name, exc)
            await connection.close()
            continue
        return connection
    assert failure is not None
    raise failure
