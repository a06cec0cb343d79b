"""Prometheus metrics of every role, in one registry per process; labels stay low-cardinality.

No label ever holds an endpoint id, a URL or an organisation: label values come from small
fixed sets (outcome, status class, event type, trigger, ladder delay, queue role, route).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info

from svc import __version__

OUTCOMES = (
    "success",
    "http_error",
    "timeout",
    "connect",
    "tls",
    "dns",
    "blocked",
    "proxy_error",
    "broker_refused",
    "error",
)
STATUS_CLASSES = ("2xx", "3xx", "4xx", "5xx", "none")
SKIP_REASONS = ("already_delivered", "redelivered", "republished", "stand_in")
NOTICE_OUTCOMES = ("sent", "retried", "given_up", "unaddressed")
"""Why a message came back with a delivery the log says was made: the broker redelivered it,
the outbox sweep published its event again, or it stands in for a delivery (a hand-off, a
retry queued again by the rescue)."""

_DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
_LAG_BUCKETS = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
    60,
    300,
    1800,
    3600,
    21600,
    86400,
    259200,
)
_HTTP_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class Metrics:
    """Every ``svc_`` metric, registered in ``registry``."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        Info("svc_build", "Running version.", registry=r).info({"version": __version__})
        self.deliveries = Counter(
            "svc_deliveries_total",
            "Delivery attempts by outcome and response status class.",
            ["outcome", "status_class"],
            registry=r,
        )
        self.delivery_duration = Histogram(
            "svc_delivery_duration_seconds",
            "Time from sending a delivery to its outcome.",
            buckets=_DURATION_BUCKETS,
            registry=r,
        )
        self.delivery_lag = Histogram(
            "svc_delivery_lag_seconds",
            "Time from event creation to successful delivery, by trigger.",
            ["trigger"],
            buckets=_LAG_BUCKETS,
            registry=r,
        )
        self.in_flight = Gauge(
            "svc_deliveries_in_flight", "Deliveries being sent by this process.", registry=r
        )
        self.deferred = Counter(
            "svc_deliveries_deferred_total",
            "Jobs postponed because their endpoint was at its in-flight cap and slow.",
            registry=r,
        )
        self.handed_off = Counter(
            "svc_deliveries_handed_off_total",
            "Slow deliveries of an event handed off as jobs of their own, so the event is acked.",
            registry=r,
        )
        self.rescued = Counter(
            "svc_retries_rescued_total",
            "Retries queued again because their next attempt was long overdue (lost in RabbitMQ).",
            registry=r,
        )
        self.skipped = Counter(
            "svc_deliveries_skipped_total",
            "Deliveries of a message that came back left out because the delivery log has them "
            "made already, or another copy in the same dispatcher made or handed them on, by why "
            "the message came back.",
            ["reason"],
            registry=r,
        )
        self.dropped = Counter(
            "svc_deliveries_dropped_total",
            "Jobs dropped without delivery, by reason (endpoint deleted, malformed job).",
            ["reason"],
            registry=r,
        )
        self.retries = Counter(
            "svc_retries_scheduled_total",
            "Retries put into a delay queue, by delay.",
            ["delay"],
            registry=r,
        )
        self.exhausted = Counter(
            "svc_deliveries_exhausted_total",
            "Jobs whose retry window closed without a successful delivery.",
            registry=r,
        )
        self.endpoints_disabled = Counter(
            "svc_endpoints_disabled_total",
            "Endpoints the scheduler disabled because every delivery attempt to them failed "
            "for SVC_ENDPOINT_DISABLE_AFTER.",
            registry=r,
        )
        self.filtered = Counter(
            "svc_deliveries_filtered_total",
            "Deliveries not made because the event did not meet the endpoint's payload "
            "filter (not attempts, not failures).",
            registry=r,
        )
        self.notices = Counter(
            "svc_notices_total",
            "Email notices the scheduler handled, by outcome: sent, retried (the mail server "
            "refused or was away; tried again with back-off), given_up (after the last try) "
            "or unaddressed (the organisation names no address).",
            ["outcome"],
            registry=r,
        )
        for outcome in NOTICE_OUTCOMES:
            self.notices.labels(outcome)
        self.jobs = Counter(
            "svc_jobs_created_total",
            "Deliveries started: an event's subscribers (initial, by dispatchers) and jobs for "
            "resends and test sends (by the scheduler), by trigger.",
            ["trigger"],
            registry=r,
        )
        self.events_published = Counter(
            "svc_events_published_total",
            "Events confirmed by the broker, by event type.",
            ["type"],
            registry=r,
        )
        self.events_rejected = Counter(
            "svc_events_rejected_total",
            "Messages of the events exchange the service could not accept, moved to the "
            "rejected queue, by reason.",
            ["reason"],
            registry=r,
        )
        self.publish_failures = Counter(
            "svc_event_publish_failures_total",
            "Committed events whose publish failed or timed out; the outbox sweep sends them.",
            registry=r,
        )
        self.amqp_blocked = Gauge(
            "svc_amqp_blocked",
            "1 while RabbitMQ blocks this process's publishing connection (a memory or disk "
            "alarm): its publishes wait, the API's events wait in the outbox.",
            registry=r,
        )
        self.outbox_republished = Counter(
            "svc_outbox_republished_total",
            "Events re-published by the outbox sweep after a lost publish.",
            registry=r,
        )
        self.queue_depth = Gauge(
            "svc_queue_messages",
            "Messages ready in each queue, by queue role (delay queues as delay.<ms>ms).",
            ["queue"],
            registry=r,
        )
        self.ordered_held = Gauge(
            "svc_ordered_deliveries_held",
            "Deliveries to ordered endpoints waiting behind the head of their lane.",
            registry=r,
        )
        self.queue_consumers = Gauge(
            "svc_queue_consumers",
            "Consumers the broker counts on each queue, by queue role.",
            ["queue"],
            registry=r,
        )
        self.http_requests = Counter(
            "svc_http_requests_total",
            "API requests by route template, method and status code.",
            ["route", "method", "status"],
            registry=r,
        )
        self.http_duration = Histogram(
            "svc_http_request_duration_seconds",
            "API request latency by route template.",
            ["route"],
            buckets=_HTTP_BUCKETS,
            registry=r,
        )
        self.rate_limit_bypassed = Counter(
            "svc_rate_limit_bypassed_total",
            "API requests let through unlimited because Redis could not count them.",
            registry=r,
        )
        self.long_polls = Gauge(
            "svc_long_polls_open", "Long polls and streams currently held open.", registry=r
        )
        self.event_wait = Histogram(
            "svc_event_wait_seconds",
            "Time from an event's creation to a dispatcher taking its message from the fan-out "
            "queue: the producer's store, commit and publish, and the wait in the queue.",
            buckets=_WAIT_BUCKETS,
            registry=r,
        )


# Milliseconds matter here (a webhook's whole path is a few of them); an outbox sweep's
# publish, seconds late, still lands in a bucket of its own.
_WAIT_BUCKETS = (
    0.001,
    0.002,
    0.003,
    0.005,
    0.0075,
    0.01,
    0.015,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
    60,
    300,
    3600,
)
