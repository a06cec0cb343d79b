"""RabbitMQ destinations: an endpoint whose URL is
``amqp[s]://user:password@host:port/vhost?exchange=NAME&routing_key=KEY`` gets its events
published to that exchange rather than POSTed.

The password is never stored in the URL: ``split_password`` takes it out before the URL is
written, and it is kept sealed beside it like a signing secret; the API shows the URL with
``MASK`` in its place. A change that sends the masked URL back keeps the stored password only
while the URL still names the same broker and user (``keeps_password``), so nobody who may
edit an endpoint can point the stored password at a broker of their own.

Only ``exchange`` (required) and ``routing_key`` (the event type when absent) may be given in
the query: the AMQP client reads other parameters of a URL as local file paths and TLS
switches (``cafile``, ``keyfile``, ``no_verify_ssl``…), which no endpoint owner may set.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

SCHEMES = ("amqp", "amqps")
MASK = "****"
"""What the API shows in place of a broker URL's password."""
PARAMETERS = ("exchange", "routing_key")
MAX_NAME = 255
"""Bytes of an exchange name or routing key at most (an AMQP short string)."""


@dataclass(frozen=True, slots=True)
class Broker:
    """Where one endpoint's events are published, decoded."""

    host: str
    port: int
    tls: bool
    user: str | None
    password: str | None
    vhost: str
    exchange: str
    routing_key: str | None
    """None: each event's type."""

    @property
    def key(self) -> tuple[str, int, bool, str | None, str | None, str]:
        """One connection serves every endpoint with the same key."""
        return (self.host, self.port, self.tls, self.user, self.password, self.vhost)


def is_broker(url: str) -> bool:
    return url.startswith(("amqp://", "amqps://"))


def problem(url: str) -> str | None:
    """What is wrong with a broker URL, in words, or None (the host is checked by the
    caller, like an http URL's)."""
    try:
        parts = urlsplit(url)
        port = parts.port  # raises on a port out of range
    except ValueError:
        port = 0
    if not parts.hostname or port == 0:
        return "The broker URL needs a valid host (and port)."
    if parts.fragment:
        return "A broker URL has no fragment."
    if "/" in parts.path[1:]:
        return "The virtual host is the path's one segment; write a '/' in it as %2F."
    try:
        query = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError:
        return "The query must be exchange=NAME and optionally routing_key=KEY."
    names = [name for name, _ in query]
    unknown = sorted(set(names) - set(PARAMETERS))
    if unknown:
        return f"A broker URL takes only exchange and routing_key, not {', '.join(unknown)}."
    if len(names) != len(set(names)):
        return "Give exchange and routing_key once each."
    values = dict(query)
    if not values.get("exchange"):
        return "Name the exchange to publish to: ?exchange=NAME."
    for name, value in values.items():
        if len(value.encode()) > MAX_NAME:
            return f"The {name} is at most {MAX_NAME} bytes."
    return None


def split_password(url: str) -> tuple[str, str | None]:
    """The URL without its password, and the password (decoded; None when it has none)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url, None
    user = parts.username or ""
    return _with_userinfo(url, user), unquote(parts.password)


def with_password(url: str, password: str | None) -> str:
    """A stored URL with ``password`` put back (encoded), or as it is when there is none."""
    if password is None:
        return url
    user = urlsplit(url).username or ""
    return _with_userinfo(url, f"{user}:{quote(password, safe='')}")


def shown(url: str, password: str | None) -> str:
    """The URL the API shows: ``MASK`` in place of the password."""
    if password is None:
        return url
    return _with_userinfo(url, f"{urlsplit(url).username or ''}:{MASK}")


def masked(url: str) -> bool:
    """Whether a URL sent in a change carries ``MASK`` as its password (keep the stored one)."""
    return is_broker(url) and urlsplit(url).password == MASK


def keeps_password(stored: str, sent: str) -> bool:
    """Whether a masked URL sent in a change may keep the stored password: same scheme, host,
    port and user as the stored URL."""
    before, after = urlsplit(stored), urlsplit(sent)
    return (before.scheme, before.hostname, before.port, before.username) == (
        after.scheme,
        after.hostname,
        after.port,
        after.username,
    )


def broker_of(url: str, password: str | None) -> Broker:
    """A stored broker URL (valid: ``problem`` said so) and its password, decoded."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    tls = parts.scheme == "amqps"
    return Broker(
        host=parts.hostname or "",
        port=parts.port or (5671 if tls else 5672),
        tls=tls,
        user=None if parts.username is None else unquote(parts.username),
        password=password,
        vhost=unquote(parts.path[1:]) or "/",
        exchange=query["exchange"],
        routing_key=query.get("routing_key") or None,
    )


def _with_userinfo(url: str, userinfo: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    netloc = f"{userinfo}@{host}" if userinfo else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
