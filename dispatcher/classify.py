"""Outcome of one delivery attempt: a small fixed vocabulary for logs and metric labels.

The delivery log, which the endpoint's owner reads, says ``dns`` both of a host name that
did not resolve and of one that resolved only to addresses deliveries may not reach
(``logged_outcome``): otherwise an owner could point endpoints at guessed names and learn
which exist inside the network. The metrics, spans and the dispatcher's own log keep
``blocked`` for the second.
"""

from __future__ import annotations

import asyncio
import ssl

import aiohttp

from dispatcher.errors import BlockedAddress, BlockedTarget


def status_class(status: int | None) -> str:
    """``2xx``…``5xx``, or ``none`` when no response came."""
    if status is None or not 200 <= status <= 599:
        return "none"
    return f"{status // 100}xx"


def outcome_of_status(status: int) -> str:
    """Only 2xx succeeds; a 3xx is a failure because redirects are never followed."""
    return "success" if 200 <= status <= 299 else "http_error"


def logged_outcome(exc: BaseException, outcome: str) -> str:
    """What the delivery log says of an attempt that failed with ``exc`` (``outcome``)."""
    return "dns" if refused_after_resolving(exc) else outcome


def refused_after_resolving(exc: BaseException) -> bool:
    """Whether a host name resolved only to addresses deliveries may not reach."""
    return isinstance(exc, aiohttp.ClientConnectorDNSError) and isinstance(
        exc.os_error, BlockedAddress
    )


def outcome_of_error(exc: BaseException) -> str:
    """Map a transport error to timeout, tls, blocked, dns, connect or error."""
    if isinstance(exc, BlockedTarget):
        return "blocked"
    if isinstance(exc, TimeoutError | asyncio.TimeoutError | aiohttp.ServerTimeoutError):
        return "timeout"
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return "blocked" if refused_after_resolving(exc) else "dns"
    if isinstance(exc, aiohttp.ClientSSLError | ssl.SSLError):
        return "tls"
    if isinstance(
        exc,
        aiohttp.ClientConnectorError
        | aiohttp.ServerDisconnectedError
        | aiohttp.ClientOSError
        | aiohttp.ClientPayloadError
        | ConnectionError,
    ):
        return "connect"
    return "error"
