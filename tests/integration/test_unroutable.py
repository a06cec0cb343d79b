"""A publish that no queue would take fails loudly instead of vanishing."""

from __future__ import annotations

import pytest
from aio_pika.exceptions import PublishError

from svc.amqp.delivery_jobs import DeliveryJob
from svc.context import Context


async def test_publish_to_a_missing_queue_raises(ctx: Context) -> None:
    job = DeliveryJob("evt_x", "payment.created", "org_x", "test", 0, "we_x", b"{}")
    with pytest.raises(PublishError):
        await ctx.channel.default_exchange.publish(
            job.to_message(), routing_key=f"{ctx.topology.namespace}.no-such-queue"
        )
