"""``SVC_AMQP_URL``: one RabbitMQ URL, or several separated by commas (one per node of a
cluster, each with its own credentials), tried in turn on every connect and reconnect.

A comma inside one URL (in a password, say) is written ``%2C``, as any reserved character of
a URL's user information may be.
"""

from __future__ import annotations

from urllib.parse import urlsplit

SCHEMES = ("amqp", "amqps")


def split_urls(text: str) -> tuple[str, ...]:
    """The URLs of ``text`` in order; ValueError when a part is not an amqp:// or amqps:// URL
    with a host. Messages name a part by its position and its node, never its credentials."""
    parts = [part.strip() for part in text.split(",")]
    for position, part in enumerate(parts, 1):
        which = f"URL {position} of {len(parts)}" if len(parts) > 1 else "the URL"
        if not part:
            raise ValueError(f"{which} is empty (expected amqp://user:password@host:port/vhost)")
        try:
            url = urlsplit(part)
            host, _ = url.hostname, url.port  # .port raises on a port that is no number
        except ValueError:
            raise ValueError(f"{which} is not a valid URL") from None
        if url.scheme not in SCHEMES:
            shown = f" ({node_name(part)})" if host else ""
            raise ValueError(f"{which}{shown} is not an amqp:// or amqps:// URL")
        if not host:
            raise ValueError(f"{which} has no host")
    return tuple(parts)


def node_name(url: str) -> str:
    """``url`` without its credentials: scheme, host, port and virtual host, for logs."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "?"
        port = parts.port
    except ValueError:
        return "(unparseable URL)"
    if ":" in host:
        host = f"[{host}]"
    where = f"{host}:{port}" if port is not None else host
    scheme = f"{parts.scheme}://" if parts.scheme else ""
    return f"{scheme}{where}{parts.path or '/'}"
