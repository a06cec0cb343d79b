"""The Dramatiq baseline: an actor that signs and POSTs with ``requests``; Dramatiq retries it.

RabbitMQ broker, Dramatiq's default middleware (its retries with back-off included), one
``requests.Session`` per worker thread. Configured through ``BENCH_AMQP_URL`` and
``BENCH_QUEUE``.

Worker: ``dramatiq benchmarks.dramatiq_worker -p 2 -t 8``.
Producer: ``python -m benchmarks.dramatiq_worker TARGETS_JSON COUNT RATE CREATED_OUT``.
"""

from __future__ import annotations

import os
import sys

import dramatiq
from dramatiq.brokers.rabbitmq import RabbitmqBroker

from benchmarks.plain import Sessions, post
from benchmarks.producer import produce

dramatiq.set_broker(
    RabbitmqBroker(url=os.environ.get("BENCH_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/"))
)
sessions = Sessions()


@dramatiq.actor(
    queue_name=os.environ.get("BENCH_QUEUE", "bench_dramatiq"),
    max_retries=20,
    min_backoff=1000,
    max_backoff=3_600_000,
)
def deliver(url: str, secret: str, body: str, event_id: str) -> None:
    post(sessions, url, secret, body, event_id)


def send(url: str, secret: str, body: str, event_id: str) -> None:
    deliver.send(url, secret, body, event_id)


if __name__ == "__main__":
    produce(sys.argv[1:], send, dramatiq.get_broker().close)
