"""Publishing deliveries to the RabbitMQ brokers of endpoints (``svc.destinations``).

A delivery to a RabbitMQ destination is one persistent message to the endpoint's exchange,
the exact body with the delivery's headers (its signatures, the endpoint's custom headers) as
AMQP headers, published ``mandatory`` on a channel in confirm mode: the broker's ack is the
delivery's 2xx. A nack, a message no queue takes (returned), or a channel the broker closes
(no such exchange, access refused) raise ``Refused``; a connection that cannot be made or is
lost raises the ``OSError`` behind it (``ssl.SSLError`` for TLS), so the dispatcher logs it as
it logs an HTTP receiver's.

Connections are pooled by destination (host, port, credentials, virtual host and TLS
context), at most ``MAX_CONNECTIONS`` per process: a new destination closes the one used
longest ago that is not publishing, and waits while every one is. A connection unused for
``IDLE`` seconds is closed.

The broker's address is resolved by the caller's ``resolve`` (the dispatcher's guarded
resolver, which refuses private addresses) and the connection is made to that address, so
the address checked is the address connected to; with TLS the certificate is checked against
the host name. This module speaks to aiormq, the AMQP client under aio-pika, because
aio-pika's ``connect`` cannot take the TLS server name apart from the address; it uses only
aiormq's public API (``connect``, ``channel``, ``basic_publish``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import ssl
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import aiormq
from aiormq.abc import AbstractChannel, AbstractConnection
from aiormq.exceptions import (
    AMQPConnectionError,
    AuthenticationError,
    ChannelClosed,
    ConnectionClosed,
    DeliveryError,
    ProbableAuthenticationError,
    PublishError,
)
from pamqp.commands import Basic
from pamqp.common import FieldTable
from yarl import URL

from svc import __version__
from svc.destinations import Broker

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 100
"""Broker connections a process keeps open at most."""
IDLE = 60.0
"""Seconds a connection may stay unused before it is closed."""
MAX_CHANNELS = 64
"""Channels (one per exchange and routing key) a connection keeps open at most."""

Resolve = Callable[[str, int], Awaitable[str]]
"""The address to connect to for a host and port (raising ``OSError`` when there is none)."""


class Refused(Exception):
    """The broker refused the message: a nack, no queue to take it, no such exchange or
    virtual host, or credentials or access refused."""


@dataclass(eq=False)
class _Link:
    """One connection to a destination and its confirm channels, one per route.

    aiormq matches a returned message to its publish by ``message_id``, the event's id, and
    the same event may go to several endpoints of one broker at once; publishes that share
    a channel share their exchange and routing key, so whichever of them a return is matched
    to was unroutable too."""

    connection: AbstractConnection
    channels: dict[tuple[str, str], AbstractChannel] = field(default_factory=dict)
    publishing: Counter[tuple[str, str]] = field(default_factory=Counter)
    """Publishes waiting for their confirm, by route: their channels are never closed."""
    used: float = field(default_factory=time.monotonic)
    opening: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def closed(self) -> bool:
        return bool(self.connection.is_closed)

    @property
    def idle(self) -> bool:
        """No publish on it waits for its confirm."""
        return not any(self.publishing.values())

    async def confirming(self, route: tuple[str, str]) -> AbstractChannel:
        """The open confirm channel of ``route`` (exchange, routing key), made again when the
        broker closed the last one; past ``MAX_CHANNELS`` the one used longest ago that no
        publish is waiting on closes."""
        async with self.opening:
            channel = self.channels.pop(route, None)
            if channel is None or channel.is_closed:
                idle = [r for r in self.channels if not self.publishing[r]]
                for oldest in idle[: max(0, len(self.channels) - MAX_CHANNELS + 1)]:
                    with contextlib.suppress(Exception):
                        await self.channels.pop(oldest).close()
                channel = await self.connection.channel(
                    publisher_confirms=True, on_return_raises=True
                )
            self.channels[route] = channel
            return channel


_Key = tuple[tuple[str, int, bool, str | None, str | None, str], ssl.SSLContext | None]


class Destinations:
    """The pooled connections of one process to the endpoints' brokers."""

    def __init__(self, resolve: Resolve, limit: int = MAX_CONNECTIONS, idle: float = IDLE) -> None:
        self._resolve = resolve
        self._limit = limit
        self._idle = idle
        self._links: dict[_Key, _Link] = {}
        """By destination, the one used longest ago first."""
        self._connecting: dict[_Key, asyncio.Task[_Link]] = {}
        """The connection being made to each destination, awaited by every publish to it; a
        destination leaves when its attempt ends, however it ends."""
        self._freed = asyncio.Condition()
        self._sweeper: asyncio.Task[None] | None = None

    @property
    def open(self) -> int:
        """Connections open now."""
        return len(self._links)

    @property
    def connecting(self) -> int:
        """Destinations being connected to now."""
        return len(self._connecting)

    @property
    def channels(self) -> int:
        """Channels open now, over every connection."""
        return sum(len(link.channels) for link in self._links.values())

    async def publish(
        self,
        broker: Broker,
        context: ssl.SSLContext | None,
        body: bytes,
        headers: dict[str, str],
        routing_key: str,
        message_id: str,
    ) -> None:
        """Publish one delivery and wait for the broker's confirm; see the module's docstring
        for what it raises. The caller bounds the time it may take."""
        key: _Key = (broker.key, context)
        route = (broker.exchange, routing_key)
        link = await self._link(key, broker, context)
        link.publishing[route] += 1
        try:
            channel = await link.confirming(route)
            properties = Basic.Properties(
                content_type="application/json",
                delivery_mode=2,
                message_id=message_id,
                app_id="svc-webhooks",
                headers=dict(headers),
            )
            confirmation = await channel.basic_publish(
                body,
                exchange=broker.exchange,
                routing_key=routing_key,
                properties=properties,
                mandatory=True,
            )
        except DeliveryError as returned:
            raise Refused(_returned(returned)) from returned
        except ChannelClosed as closed:
            raise Refused(_reply(closed)) from closed
        except AMQPConnectionError as lost:
            await self._drop(key, link)
            raise _connection_error(lost) from lost
        except RuntimeError as closed:  # aiormq's answer on a connection already closed
            await self._drop(key, link)
            raise ConnectionResetError("the broker closed the connection") from closed
        finally:
            link.publishing[route] -= 1
            link.used = time.monotonic()
            if link.idle:
                async with self._freed:
                    self._freed.notify_all()
        if not isinstance(confirmation, Basic.Ack):
            raise Refused("the broker did not accept the message (nack)")

    async def close(self) -> None:
        """Close every connection and stop the idle sweep."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        links, self._links = list(self._links.values()), {}
        for link in links:
            await _close(link)

    async def _link(self, key: _Key, broker: Broker, context: ssl.SSLContext | None) -> _Link:
        link = self._links.get(key)
        if link is not None and not link.closed:
            self._links[key] = self._links.pop(key)  # the most recently used now
            return link
        opening = self._connecting.get(key)
        if opening is None:
            # One attempt per destination, shared: a publish that gives up (its delivery's
            # time-out) leaves it running for the others.
            opening = asyncio.create_task(self._open(key, broker, context))
            self._connecting[key] = opening
            opening.add_done_callback(functools.partial(self._opened, key))
        return await asyncio.shield(opening)

    def _opened(self, key: _Key, opening: asyncio.Task[_Link]) -> None:
        if self._connecting.get(key) is opening:
            del self._connecting[key]
        if not opening.cancelled():
            opening.exception()  # retrieved, whether or not a publish still awaits it

    async def _open(self, key: _Key, broker: Broker, context: ssl.SSLContext | None) -> _Link:
        self._links.pop(key, None)  # closed
        await self._make_room()
        link = _Link(await self._connect(broker, context))
        self._links[key] = link
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.create_task(self._sweep())
        return link

    async def _connect(self, broker: Broker, context: ssl.SSLContext | None) -> AbstractConnection:
        """A connection to the broker's checked address (the certificate checked against its
        host name with TLS)."""
        address = await self._resolve(broker.host, broker.port)
        url = URL.build(
            scheme="amqps" if broker.tls else "amqp",
            host=address,
            port=broker.port,
            user=broker.user if broker.user is not None else "guest",
            password=broker.password if broker.password is not None else "guest",
            path="/" + broker.vhost,
        )
        extra: dict[str, object] = {}
        if broker.tls:  # the checked address, the certificate checked against the name
            extra = {
                "context": context or ssl.create_default_context(),
                "server_hostname": broker.host,
            }
        properties: FieldTable = {
            "connection_name": "svc-webhooks dispatcher",
            "product": "svc-webhooks",
            "version": __version__,
        }
        try:
            connection: AbstractConnection = await aiormq.connect(
                url, client_properties=properties, **extra
            )
        except (AuthenticationError, ProbableAuthenticationError) as refused:
            raise Refused(f"the broker refused the credentials of {broker.user or 'guest'}") from (
                refused
            )
        except ConnectionClosed as closed:  # e.g. no such virtual host, or no access to it
            raise Refused(_reply(closed)) from closed
        except AMQPConnectionError as failed:
            raise _connection_error(failed) from failed
        return connection

    async def _make_room(self) -> None:
        """Close the idle connection used longest ago when the pool is full; wait while every
        connection is publishing."""
        async with self._freed:
            while len(self._links) >= self._limit:
                for key, link in self._links.items():
                    if link.idle or link.closed:
                        del self._links[key]
                        await _close(link)
                        break
                else:
                    await self._freed.wait()

    async def _drop(self, key: _Key, link: _Link) -> None:
        if self._links.get(key) is link:
            del self._links[key]
        await _close(link)

    async def _sweep(self) -> None:
        """Close connections unused for ``idle`` seconds, until none is left."""
        while self._links:
            await asyncio.sleep(self._idle / 4)
            stale = time.monotonic() - self._idle
            for key, link in list(self._links.items()):
                if link.closed or (link.idle and link.used < stale):
                    await self._drop(key, link)


async def _close(link: _Link) -> None:
    try:
        await link.connection.close()
    except Exception as failed:  # already gone: nothing is left to close
        log.debug("closing a broker connection: %r", failed)


def _connection_error(failed: AMQPConnectionError) -> OSError:
    """The OS or TLS error behind a failed or lost connection (``ssl.SSLError`` is an
    ``OSError``), or a ``ConnectionError`` saying the broker closed it."""
    cause = failed.__cause__
    if isinstance(cause, OSError):
        return cause
    reason = failed.args[0] if failed.args and isinstance(failed.args[0], int) else None
    if reason is not None and len(failed.args) > 1 and isinstance(failed.args[1], str):
        return ConnectionError(reason, failed.args[1])
    return ConnectionResetError("the broker closed the connection")


def _reply(closed: ChannelClosed | ConnectionClosed) -> str:
    """The broker's reply text (``NOT_FOUND - no exchange 'x' in vhost '/'``)."""
    texts = [arg for arg in closed.args if isinstance(arg, str)]
    return texts[0] if texts else str(closed)


def _returned(returned: DeliveryError) -> str:
    if isinstance(returned, PublishError):
        return f"no queue took the message ({returned.args[0]})"
    return "the broker did not accept the message (nack)"
