"""Why a delivery was refused before anything was sent; both classify as ``blocked``.

Tree::

    BlockedTarget       the URL's host is always refused: a non-public IP literal, also in a
                        short IPv4 form, or localhost (checked before sending)
    BlockedAddress      a host name resolved only to non-public addresses (an OSError, as
                        the connector's resolver must raise)

and, for a delivery through the egress proxy (``dispatcher.egress``), which resolves its
target itself:

    Unresolved          the target's host name did not resolve (``dns``)
"""

from __future__ import annotations


class BlockedTarget(Exception):
    """The URL's host is always refused (``svc.addresses.always_blocked``)."""


class BlockedAddress(OSError):
    """The target resolves only to addresses that deliveries may not reach."""


class Unresolved(OSError):
    """A proxied target's host name did not resolve."""
