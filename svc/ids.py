"""Identifiers: a type prefix and a time-ordered random part (``evt_01j…``)."""

from __future__ import annotations

import os
import random
import secrets
import time

_ALPHABET = "0123456789abcdefghijklmnopqrstuv"  # base32hex, lower case: sorts like the number
# Two characters per 10 bits: 13 lookups spell the 128 bits (and 2 zero bits) of an id.
_PAIRS = tuple(a + b for a in _ALPHABET for b in _ALPHABET)
_SHIFTS = tuple(range(120, -1, -10))
MAX_ID_LENGTH = 255


class _Monotonic:
    """The last value handed out, so one process's ids keep their creation order within a
    millisecond too (as monotonic ULIDs do): lists read newest first by id."""

    last = 0


def new_id(prefix: str) -> str:
    """A new id like ``evt_0ssd…``: 48 bits of milliseconds then 80 random bits, so ids of
    one kind sort by creation time (base32hex of the 16 bytes, lower case, unpadded).

    An id made in the same millisecond as the one before it in this process (or after the
    clock stepped back) is that one plus 1: still unique, and later ids sort later.
    """
    return _spelled(prefix, (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10)))


def new_record_id(prefix: str) -> str:
    """An id like ``new_id``'s for a record whose id grants nothing (a delivery attempt):
    its random part comes from the process's generator (seeded from the system's at start)
    rather than a system call per id."""
    return _spelled(prefix, (int(time.time() * 1000) << 80) | random.getrandbits(80))


def _spelled(prefix: str, value: int) -> str:
    if value <= _Monotonic.last:
        value = _Monotonic.last + 1
    _Monotonic.last = value
    value <<= 2
    pairs = _PAIRS
    return prefix + "_" + "".join([pairs[(value >> shift) & 1023] for shift in _SHIFTS])


def has_prefix(value: str, prefix: str) -> bool:
    """True when ``value`` looks like an id of this prefix."""
    rest = value[len(prefix) + 1 :]
    return value.startswith(prefix + "_") and len(rest) == 26 and all(c in _ALPHABET for c in rest)


def is_opaque_id(value: str) -> bool:
    """True when ``value`` can be an id chosen by someone else (a foreign producer's event id,
    ``order-123``): 1 to ``MAX_ID_LENGTH`` printable characters, none of them ``/``, so it
    fits a URL path segment, a header and a PostgreSQL text column."""
    return 0 < len(value) <= MAX_ID_LENGTH and value.isprintable() and "/" not in value


def new_secret(prefix: str, nbytes: int = 24) -> str:
    """A random secret with a readable prefix, such as ``whsec_…`` or ``svc_test_…``."""
    return f"{prefix}{secrets.token_urlsafe(nbytes)}"
