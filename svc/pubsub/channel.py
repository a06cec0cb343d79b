"""Following a Redis pub/sub channel, subscribing again whenever the subscription is lost.

The API's wake-up hub and the dispatcher's cache notices both follow their channel here."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from redis.asyncio import Redis

log = logging.getLogger(__name__)

RESUBSCRIBE_DELAY = 0.5


async def follow(
    redis: Redis,
    channel: str,
    on_notice: Callable[[object], None],
    on_subscribed: Callable[[], None] = lambda: None,
    on_lost: Callable[[], None] = lambda: None,
) -> None:
    """Call ``on_notice`` with each message's data until cancelled; ``on_subscribed`` runs
    after every (re)subscription, since notices may have been missed before it, and
    ``on_lost`` when a subscription is lost."""
    while True:
        pubsub = redis.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(channel)
            on_subscribed()
            async for message in pubsub.listen():
                on_notice(message.get("data"))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("notices on %s lost; subscribing again", channel, exc_info=True)
            on_lost()
            await asyncio.sleep(RESUBSCRIBE_DELAY)
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()  # type: ignore[no-untyped-call]
