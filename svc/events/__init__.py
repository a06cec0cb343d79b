"""Events: the envelope, their storage with the outbox, publishing, and the delivery log."""

from svc.events.envelope import ENVIRONMENTS, EVENT_TYPES, Event, iso_ms, new_event

__all__ = ["ENVIRONMENTS", "EVENT_TYPES", "Event", "iso_ms", "new_event"]
