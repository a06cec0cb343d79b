"""Requests from the API to the scheduler (resend an event, send a test event), as AMQP messages."""

from __future__ import annotations

from dataclasses import dataclass

import aio_pika
import orjson


@dataclass(frozen=True, slots=True)
class Resend:
    """Deliver a stored event again: to one endpoint, or to every endpoint subscribed now.

    The event is named by its scope and id (another scope's event may share the id); a request
    staged before requests named the scope has ``org`` and ``env`` None.
    """

    event_id: str
    trigger: str = "resend"
    endpoint_id: str | None = None
    org: str | None = None
    env: str | None = None

    def to_body(self) -> bytes:
        return orjson.dumps(
            {
                "event_id": self.event_id,
                "trigger": self.trigger,
                "endpoint_id": self.endpoint_id,
                "org": self.org,
                "env": self.env,
            }
        )

    def to_message(self) -> aio_pika.Message:
        return aio_pika.Message(
            self.to_body(),
            content_type="application/json",
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
        )

    @classmethod
    def from_body(cls, body: bytes) -> Resend:
        data = orjson.loads(body)
        org, env = data.get("org"), data.get("env")
        return cls(
            str(data["event_id"]),
            str(data["trigger"]),
            data.get("endpoint_id"),
            None if org is None else str(org),
            None if env is None else str(env),
        )
