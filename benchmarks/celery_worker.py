"""The Celery baseline: a task that signs and POSTs with ``requests``, retried by ``autoretry_for``.

Written the way a team would: RabbitMQ broker, late acks, no result backend, one
``requests.Session`` per worker thread or greenlet. Configured by the harness through
``BENCH_AMQP_URL``, ``BENCH_QUEUE`` and ``BENCH_BROKER_HEARTBEAT`` (the gevent pool needs 0:
with the default, Celery 5.7's green event loop stalls about 0.1 s per message).

Worker: ``celery -A benchmarks.celery_worker worker -P prefork|gevent ...``.
Producer: ``python -m benchmarks.celery_worker TARGETS_JSON COUNT RATE CREATED_OUT``.
"""

from __future__ import annotations

import os
import sys

import requests
from celery import Celery  # type: ignore[import-untyped]

from benchmarks.plain import DeliveryFailed, Sessions, post
from benchmarks.producer import produce

app = Celery("bench", broker=os.environ.get("BENCH_AMQP_URL", "amqp://guest:guest@127.0.0.1//"))
app.conf.update(
    task_default_queue=os.environ.get("BENCH_QUEUE", "bench.celery"),
    task_ignore_result=True,
    task_acks_late=True,
    broker_heartbeat=int(os.environ.get("BENCH_BROKER_HEARTBEAT", "120")),
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)
sessions = Sessions()


@app.task(  # type: ignore[untyped-decorator]
    name="deliver",  # the same name whether imported by the worker or run as the producer
    autoretry_for=(requests.RequestException, DeliveryFailed),
    retry_backoff=True,
    retry_backoff_max=3600,
    max_retries=20,
)
def deliver(url: str, secret: str, body: str, event_id: str) -> None:
    post(sessions, url, secret, body, event_id)


def send(url: str, secret: str, body: str, event_id: str) -> None:
    deliver.delay(url, secret, body, event_id)


if __name__ == "__main__":
    produce(sys.argv[1:], send)
