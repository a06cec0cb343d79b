"""The Celery and Dramatiq workers of ``benchmarks.baselines``: one task body written as a team
would, signing anew for each message, POSTing with a ``requests.Session`` per thread (per
greenlet under gevent), raising on a non-2xx answer so the framework retries with back-off."""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
import time

import dramatiq
import requests
from celery import Celery  # type: ignore[import-untyped]
from dramatiq.brokers.rabbitmq import RabbitmqBroker

AMQP_URL = os.environ.get("BENCH_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
QUEUE = os.environ.get("BENCH_QUEUE", "bench_jobs")
sessions = threading.local()


class DeliveryFailed(Exception):
    """The endpoint answered with a non-2xx status."""


def deliver(url: str, secret: str, body: str, event_id: str) -> None:
    if not hasattr(sessions, "session"):
        sessions.session = requests.Session()
    data, now = body.encode(), int(time.time())
    digest = hmac.new(secret.encode(), b"%d.%s" % (now, data), hashlib.sha256).hexdigest()
    headers = {"Content-Type": "application/json", "Svc-Event-Id": event_id}
    headers["Svc-Signature"] = f"t={now},v1={digest}"
    answer = sessions.session.post(
        url, data=data, headers=headers, timeout=10, allow_redirects=False
    )
    if not 200 <= answer.status_code <= 299:
        raise DeliveryFailed(answer.status_code)


app = Celery("bench", broker=AMQP_URL)
app.conf.update(
    task_default_queue=QUEUE,
    task_ignore_result=True,
    task_acks_late=True,
    broker_heartbeat=int(os.environ.get("BENCH_BROKER_HEARTBEAT", "120")),
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)
retried = (requests.RequestException, DeliveryFailed)
app.task(
    name="deliver",
    autoretry_for=retried,
    retry_backoff=True,
    retry_backoff_max=3600,
    max_retries=20,
)(deliver)

dramatiq.set_broker(RabbitmqBroker(url=AMQP_URL))
dramatiq.actor(queue_name=QUEUE, max_retries=20, min_backoff=1000, max_backoff=3_600_000)(deliver)
