"""Intake of the events exchange: the event a message carries, or why it is rejected.

Any producer may publish on the exchange (see ``svc.amqp`` for the contract). A message the
service cannot accept is not dropped: it is kept in ``<ns>.rejected`` with its reason, counted
in ``svc_events_rejected_total`` and logged once, and only then acked.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

import orjson

from dispatcher.known_orgs import KnownOrganisations
from svc.amqp.received import Received
from svc.context import Context
from svc.envelope import ENVIRONMENTS, EVENT_TYPES, Event
from svc.errors import Rejected
from svc.events.model import StoredEvent
from svc.ids import is_opaque_id

log = logging.getLogger(__name__)

REASONS = (
    "missing_header",  # svc-org or svc-env absent, empty or not text
    "invalid_header",  # svc-created-ms is not a whole number of milliseconds
    "unknown_type",  # the routing key is no event type
    "unknown_environment",  # svc-env is neither test nor live
    "not_an_envelope",  # the body is not a JSON object with a string id
    "invalid_event_id",  # the id is not 1-255 printable characters without "/"
    "unknown_organisation",  # svc-org names no organisation (a name instead of its id)
)
_SHOWN = 80  # characters of a producer's value quoted in a detail


class Intake:
    """Accepts events of the fan-out queue, or sends them to the rejected queue."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._orgs = KnownOrganisations(ctx.orgs.existing)
        self._rejected = {reason: ctx.metrics.events_rejected.labels(reason) for reason in REASONS}

    async def accept(self, message: Received) -> StoredEvent:
        """The event of ``message``; raises Rejected when the service cannot accept it."""
        stored = read_event(message)
        if not is_opaque_id(stored.org) or not await self._orgs.exists(stored.org):
            raise Rejected(
                "unknown_organisation",
                f"svc-org {_shown(stored.org)} is not the id of an organisation "
                "(org_…; a name is not an id)",
            )
        return stored

    async def reject(self, message: Received, rejected: Rejected) -> None:
        """Keep ``message`` in the rejected queue (broker-confirmed), count it and log it."""
        await self._ctx.broker.rejected(message, rejected.reason, rejected.detail)
        self._rejected[rejected.reason].inc()
        log.warning(
            "rejected event message %r with routing key %s: %s (%s)",
            message.message_id,
            _shown(message.routing_key or ""),
            rejected.reason,
            rejected.detail,
        )


def read_event(message: Received) -> StoredEvent:
    """The event in a message of the events exchange; raises Rejected when it is unusable.

    The organisation is only read here; whether it exists is ``Intake.accept``'s question.
    """
    headers = message.headers
    org = _required(headers, "svc-org")
    env = _required(headers, "svc-env")
    event_type = message.routing_key or ""
    if event_type not in EVENT_TYPES:
        raise Rejected("unknown_type", f"routing key {_shown(event_type)} is no event type")
    if env not in ENVIRONMENTS:
        raise Rejected("unknown_environment", f"svc-env {_shown(env)} is neither test nor live")
    given = headers.get("svc-event-id")
    if given is None:
        event_id = _envelope_id(message.body)
    else:
        if not headers.get("svc-stored"):  # the service's own store holds only envelopes
            _envelope_id(message.body)
        event_id = _text(given) or ""
    if not is_opaque_id(event_id):
        raise Rejected(
            "invalid_event_id",
            f"event id {_shown(event_id)} is not 1-255 printable characters without '/'",
        )
    event = Event(event_id, event_type, env, _created_ms(headers), message.body)
    return StoredEvent(event, org)


def _envelope_id(body: bytes) -> str:
    try:
        envelope = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise Rejected("not_an_envelope", "the body is not JSON") from None
    if not isinstance(envelope, dict) or not isinstance(envelope.get("id"), str):
        raise Rejected("not_an_envelope", "the body is not a JSON object with a string id")
    event_id: str = envelope["id"]
    return event_id


def _required(headers: Mapping[str, object], name: str) -> str:
    value = _text(headers.get(name))
    if not value:
        raise Rejected("missing_header", f"header {name} is missing, empty or not text")
    return value


def _created_ms(headers: Mapping[str, object]) -> int:
    value = headers.get("svc-created-ms")
    if value is None:
        return int(time.time() * 1000)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = _text(value)
    if text is not None and text.isdigit():
        return int(text)
    raise Rejected("invalid_header", "header svc-created-ms is not a time in milliseconds")


def _text(value: object) -> str | None:
    """A header's text; None when it is absent or not text."""
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            return None
    return value if isinstance(value, str) else None


def _shown(value: str) -> str:
    return repr(value[:_SHOWN] + ("…" if len(value) > _SHOWN else ""))
