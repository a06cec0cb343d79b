"""Outcome of one delivery attempt: a small fixed vocabulary for logs and metric labels, and
the sentence the delivery log's ``error`` gives of a failure (``describe``).

The delivery log, which the endpoint's owner reads, says ``dns`` both of a host name that
did not resolve and of one that resolved only to addresses deliveries may not reach
(``logged_outcome``): otherwise an owner could point endpoints at guessed names and learn
which exist inside the network. The metrics, spans and the dispatcher's own log keep
``blocked`` for the second, and ``describe`` words both as a failed look-up.
"""

from __future__ import annotations

import asyncio
import errno
import ssl

import aiohttp

from dispatcher.errors import BlockedAddress, BlockedTarget, Unresolved
from svc.amqp.destinations import Refused


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
    """Whether a host name resolved only to addresses deliveries may not reach (found by
    the connector's resolver, or by the egress proxy's route)."""
    return isinstance(exc, BlockedAddress) or (
        isinstance(exc, aiohttp.ClientConnectorDNSError)
        and isinstance(exc.os_error, BlockedAddress)
    )


PROXY_ERRORS = (aiohttp.ClientProxyConnectionError, aiohttp.ClientHttpProxyError)
"""The egress proxy refused the connection, could not be reached, or answered CONNECT with a
status other than 2xx (``proxy_error``)."""


def outcome_of_error(exc: BaseException) -> str:
    """Map a transport error to timeout, tls, blocked, dns, proxy_error, broker_refused,
    connect or error."""
    if isinstance(exc, BlockedTarget | BlockedAddress):
        return "blocked"
    if isinstance(exc, Refused):
        return "broker_refused"
    if isinstance(exc, Unresolved):
        return "dns"
    if isinstance(exc, PROXY_ERRORS):
        return "proxy_error"
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


ERROR_LIMIT = 200
"""Characters of ``error`` kept; an exception's own text can be long."""


def describe(exc: BaseException, shown: str, host: str, port: int, timeout: float) -> str:
    """What failed, for the endpoint's owner: ``connection refused to 127.0.0.1:9``. ``shown``
    is the logged outcome, so an address refused after resolving reads as a failed look-up."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if shown == "dns":
        text = f"could not resolve {host}"
    elif shown == "blocked":
        text = f"{host} is not a public address: deliveries to it are refused"
    elif shown == "timeout":
        text = f"no answer from {where} within {timeout:g} s"
    elif shown == "proxy_error":
        text = _proxy_failure(exc, where)
    elif shown == "broker_refused":
        text = f"the broker {where} refused: {exc}"
    elif shown == "tls":
        text = f"TLS with {where} failed: {_reason(exc)}"
    elif isinstance(exc, aiohttp.ServerDisconnectedError):
        text = f"{where} closed the connection without answering"
    elif isinstance(exc, aiohttp.ClientPayloadError):
        text = f"the answer of {where} was cut off"
    elif shown == "connect":
        text = _connection_failure(exc, where)
    else:
        text = f"{type(exc).__name__} while sending to {where}"
    return text[:ERROR_LIMIT]


def _connection_failure(exc: BaseException, where: str) -> str:
    """``connection refused to host:port``, ``connection reset by host:port``, or the OS's
    reason for another failure."""
    os_error = getattr(exc, "os_error", exc)
    number = getattr(os_error, "errno", None)
    if isinstance(os_error, ConnectionRefusedError) or number == errno.ECONNREFUSED:
        return f"connection refused to {where}"
    if isinstance(os_error, ConnectionResetError) or number == errno.ECONNRESET:
        return f"connection reset by {where}"
    reason = getattr(os_error, "strerror", None)
    return (
        f"connection to {where} failed: {reason.lower()}"
        if reason
        else f"connection to {where} failed"
    )


def _proxy_failure(exc: BaseException, where: str) -> str:
    """``connection refused by the proxy host:port``, or the proxy's answer to CONNECT."""
    if isinstance(exc, aiohttp.ClientHttpProxyError):
        return f"the proxy answered CONNECT to {where} with {exc.status} {exc.message}".strip()
    assert isinstance(exc, aiohttp.ClientProxyConnectionError)
    proxy = f"{exc.host}:{exc.port}"
    os_error = exc.os_error
    if isinstance(os_error, ConnectionRefusedError) or os_error.errno == errno.ECONNREFUSED:
        return f"connection refused by the proxy {proxy}"
    reason = os_error.strerror
    return f"connection to the proxy {proxy} failed" + (f": {reason.lower()}" if reason else "")


def _reason(exc: BaseException) -> str:
    """An SSL failure's reason (``certificate verify failed: self-signed certificate``)."""
    certificate = getattr(exc, "certificate_error", None)
    found = certificate if isinstance(certificate, BaseException) else exc
    found = getattr(found, "os_error", found)
    reason = getattr(found, "verify_message", None) or getattr(found, "reason", None)
    return str(reason or type(found).__name__)
