"""Wake-up signals on one Redis pub/sub channel per namespace: payment changes, progress steps,
terminal commands and terminal presence.

A signal is a hint, never the state itself: a listener woken by one reads the state again from
PostgreSQL. Writers publish a signal after the commit of the state change it announces, so it
is never seen before that state. Each API process holds one subscriber (``api.hub``) and fans
signals out by topic; after a lost subscription every listener is woken to read again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

RESYNC = "*"
"""Topic a subscriber delivers to every listener after a reconnect: re-read everything."""


def payment_topic(payment_id: str) -> str:
    return f"pay:{payment_id}"


def terminal_topic(terminal_id: str) -> str:
    """Commands for the device connection of a terminal."""
    return f"trm:{terminal_id}"


def presence_topic(terminal_id: str) -> str:
    """The terminal went online or offline."""
    return f"trm-presence:{terminal_id}"


SIMULATORS = "simulators"
"""A simulation terminal was added: simulator hosts look for work."""


@dataclass(frozen=True, slots=True)
class Signal:
    """A topic and a small payload, e.g. ``{"kind": "status", "status": "authorized"}``."""

    topic: str
    payload: dict[str, Any]

    def dumps(self) -> bytes:
        return orjson.dumps({"topic": self.topic, **self.payload})

    @classmethod
    def loads(cls, raw: bytes | str) -> Signal:
        """Parse a signal; raises ValueError when it is not one."""
        data = orjson.loads(raw)
        if not isinstance(data, dict) or not isinstance(data.get("topic"), str):
            raise ValueError("not a signal")
        topic = data.pop("topic")
        return cls(topic, data)


def status_signal(payment_id: str, status: str) -> Signal:
    return Signal(payment_topic(payment_id), {"kind": "status", "status": status})


def progress_signal(payment_id: str, seq: int, step: str) -> Signal:
    return Signal(payment_topic(payment_id), {"kind": "progress", "seq": seq, "step": step})
