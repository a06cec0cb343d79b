"""The deliveries a dispatcher holds, by (event id, endpoint id), from the moment a source
hands one to the engine until it ends; a copy of one of them waits for that end.

A copy of an event that comes back (re-published by the outbox sweep, redelivered) while
this process still holds its delivery finds nothing in the delivery log: the first is
queued, waiting for its receiver, or having its success written. The copy waits here and is
left out when the first was made or handed on (its retry or deferral published). It waits
rather than being settled at once because its message may be the only one left to carry
the delivery: a channel that closed put the first's message back, and that copy is it.
"""

from __future__ import annotations

import asyncio

Key = tuple[str, str]
"""(event id, endpoint id)."""


class UnderWay:
    """Counts of deliveries held per key, and the copies waiting for a key to end."""

    __slots__ = ("_held", "_waiting")

    def __init__(self) -> None:
        self._held: dict[Key, int] = {}
        self._waiting: dict[Key, list[asyncio.Future[bool]]] = {}

    def start(self, key: Key) -> None:
        self._held[key] = self._held.get(key, 0) + 1

    def end(self, key: Key, carried: bool) -> None:
        """A delivery of ``key`` ended: made or handed on (``carried``), or failed (its
        message goes back); once none of ``key`` is held, the waiting copies learn which."""
        left = self._held.pop(key) - 1
        if left:
            self._held[key] = left
        elif self._waiting:
            for copy in self._waiting.pop(key, ()):
                if not copy.done():
                    copy.set_result(carried)

    async def carried(self, key: Key) -> bool | None:
        """None when no delivery of ``key`` is held; else, once they ended, whether the last
        was made or handed on."""
        if key not in self._held:
            return None
        ended = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, []).append(ended)
        return bool(await ended)
