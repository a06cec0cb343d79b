"""One frozen settings object, read once from ``SVC_*`` environment variables at the edge."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace

from yarl import URL

from svc.broker_urls import split_urls
from svc.durations import parse_duration
from svc.ladder import DEFAULT_LADDER, RetryLadder

DEFAULT_PRICING = "online=2.9%+30,phone=3.4%+30,terminal=1.7%+10,chargeback=1500"
"""Prices of every organisation without its own (``SVC_PRICING`` changes the kinds it names)."""


OTEL_SAMPLERS = (
    "always_on",
    "always_off",
    "traceidratio",
    "parentbased_always_on",
    "parentbased_always_off",
    "parentbased_traceidratio",
)
"""The values of ``SVC_OTEL_SAMPLER`` (``OTEL_TRACES_SAMPLER``): OpenTelemetry's own names."""
OTEL_EXPORTERS = ("native", "sdk")
"""The values of ``SVC_OTEL_EXPORTER``: how spans are batched, encoded and sent to the collector
(``svc.tracing.processor_of``)."""
_OTEL_VARIABLES = {
    "otel_endpoint": "OTEL_EXPORTER_OTLP_ENDPOINT",
    "otel_sampler": "OTEL_TRACES_SAMPLER",
    "otel_sampler_arg": "OTEL_TRACES_SAMPLER_ARG",
}
"""Settings also read from OpenTelemetry's standard variable when their ``SVC_`` one is unset."""


MAX_RECOVER_EVENTS = 10_000
"""The most ``SVC_MAX_RECOVER_EVENTS`` may be: what the API's description promises."""


class SettingsError(ValueError):
    """A ``SVC_*`` variable holds a value that cannot be used."""


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def _seconds(text: str) -> float:
    return parse_duration(text) / 1000


@dataclass(frozen=True, slots=True)
class Settings:
    """Every knob of the service; defaults serve a laptop."""

    amqp_url: str = "amqp://guest:guest@127.0.0.1:5672/"
    """One RabbitMQ URL, or one per node of a cluster separated by commas (``amqp_urls``)."""
    redis_url: str = "redis://127.0.0.1:6379/0"
    database_url: str = "postgresql://postgres@127.0.0.1:5432/svc"
    database_pool_size: int = 10
    database_statement_timeout: float = 30.0
    """PostgreSQL cancels a statement of ours running longer (0: no limit)."""
    database_acquire_timeout: float = 5.0
    """How long a unit of work waits for a free connection of the pool."""
    secret_key: str = field(default="", repr=False)
    redis_max_connections: int = 200
    http_host: str = "127.0.0.1"
    """Where the process listens, both ports: loopback on a laptop; the image and the chart set
    ``0.0.0.0``."""
    http_port: int = 8080
    """The API's public port (only the API role listens on it)."""
    ops_port: int = 9090
    """Every role's ``/health``, ``/ready`` and ``/metrics``: for probes and Prometheus, never
    routed to the public."""
    request_timeout: float = 8.0
    """An API request not answered by then is cancelled and answered 503 (a long poll gets its
    wait on top; WebSockets have none)."""
    namespace: str = "svc"
    queue_type: str = "classic"
    log_level: str = "INFO"
    retry_ladder: RetryLadder = field(default_factory=lambda: RetryLadder.parse(DEFAULT_LADDER))
    event_retention: float = 30 * 86400.0
    delivery_timeout: float = 10.0
    dispatcher_concurrency: int = 2000
    endpoint_concurrency: int = 200
    endpoint_wait: float = 0.5
    handoff_after: float = 1.0
    defer_delay: float = 5.0
    endpoint_cache_ttl: float = 5.0
    response_body_limit: int = 1024
    allow_private_targets: bool = False
    egress_proxy: str = field(default="", repr=False)
    """An http:// forward proxy every delivery goes through (credentials allowed); empty:
    deliveries connect directly (``dispatcher.egress``)."""
    egress_no_proxy: str = ""
    """Hosts and domain suffixes reached directly though a proxy is set (no_proxy's form)."""
    endpoint_disable_after: float = 5 * 86400.0
    endpoint_failing_after: float = 3600.0
    """How long every attempt at an endpoint fails before ``webhook_endpoint.failing``."""
    smtp_host: str = ""  # empty: no email notices (operational events are sent all the same)
    smtp_port: int = 587
    smtp_starttls: bool = True
    smtp_user: str = ""
    smtp_password: str = field(default="", repr=False)
    smtp_from: str = "svc@localhost"
    dashboard_url: str = ""  # empty: this API's own /dashboard, see resolved()
    outbox_sweep_interval: float = 5.0
    outbox_sweep_age: float = 10.0
    retry_rescue_after: float = 300.0
    publish_timeout: float = 0.5
    """How long a publish after a commit waits for the broker's confirm (the API's events and
    resend requests); past it, or while the broker blocks publishing, the outbox sweep sends it."""
    batch_publish_timeout: float = 5.0
    """How long one of the scheduler's batches (outbox sweeps, resend jobs, rescued retries)
    waits for every confirm; past it the batch is tried again at the next round."""
    maintenance_interval: float = 3600.0
    otel_endpoint: str = ""  # OTLP/HTTP collector; also read from OTEL_EXPORTER_OTLP_ENDPOINT
    otel_sampler: str = "parentbased_always_on"
    """Which traces are kept: one of ``OTEL_SAMPLERS`` (also read from OTEL_TRACES_SAMPLER)."""
    otel_sampler_arg: float = 1.0
    """The ratio of the ``traceidratio`` samplers (also read from OTEL_TRACES_SAMPLER_ARG)."""
    otel_exporter: str = "native"
    """One of ``OTEL_EXPORTERS``: ``native`` batches, encodes and sends spans on a thread of
    native code that never holds the interpreter's lock; ``sdk`` is OpenTelemetry's own batch
    processor and OTLP exporter, which do that work in Python on a thread of the process."""
    queue_stats_interval: float = 5.0
    shutdown_grace: float = 15.0
    checkout_base_url: str = ""  # empty: this API's own /checkout, see resolved()
    payment_expiry: float = 1800.0
    expiry_sweep_interval: float = 1.0
    terminal_timeout: float = 120.0
    terminal_step_delay: float = 1.0
    terminal_connect_url: str = ""
    simulator_lease: float = 15.0
    terminal_presence_ttl: float = 30.0
    idempotency_ttl: float = 86400.0
    payout_schedule: str = "daily"
    settlement_delay: float = 0.0
    pricing: str = DEFAULT_PRICING
    rate_limit_live: int = 100
    """Requests per second of one live API key (bursts of as many); 0: no limit."""
    rate_limit_test: int = 25
    """The same for a test key."""
    api_key_cache_ttl: float = 5.0
    """How long an API process keeps a resolved key (a roll or revocation is announced), and
    an unknown one."""
    failed_auth_limit: int = 30
    """Requests with an unknown API key one client address may send per ``failed_auth_window``;
    beyond, 429 before any look-up (0: no limit)."""
    failed_auth_window: float = 60.0
    trusted_proxy_hops: int = 0
    """Proxies in front of the API that append to ``X-Forwarded-For``: the client address is the
    entry that many from the right (0: the peer address, the header ignored)."""
    max_streams_per_key: int = 100
    """Payment streams one API key may hold open on one API process (0: no limit)."""
    max_endpoints_per_scope: int = 500
    """Webhook endpoints one organisation may have in one environment (0: no limit)."""
    max_recover_events: int = MAX_RECOVER_EVENTS
    """Most events one recover request resends (from 1 to ``MAX_RECOVER_EVENTS``)."""
    dashboard_session_ttl: float = 3600.0
    dashboard_session_max_age: float = 12 * 3600.0
    """A dashboard session ends this long after signing in, however often it is used."""
    dashboard_secure_cookies: bool = True

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Build settings from ``SVC_<FIELD>`` variables; unknown values raise SettingsError."""
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for f in fields(cls):
            raw = env.get(f"SVC_{f.name.upper()}")
            if raw is None:
                continue
            try:
                values[f.name] = _convert(f.name, str(f.type), raw)
            except ValueError as exc:
                raise SettingsError(f"SVC_{f.name.upper()}: {exc}") from None
        for name, standard in _OTEL_VARIABLES.items():  # OpenTelemetry's own names
            if name not in values and env.get(standard):
                try:
                    values[name] = _convert(name, "str", env[standard])
                except ValueError as exc:
                    raise SettingsError(f"{standard}: {exc}") from None
        settings = cls(**values)  # type: ignore[arg-type]
        settings.validate()
        return settings

    def validate(self) -> None:
        """Reject combinations that cannot work. Values that a domain reads (prices, the payout
        schedule) are checked by that domain at start-up (``svc.money.model.startup``)."""
        if not self.namespace or not self.namespace.replace("-", "").replace("_", "").isalnum():
            raise SettingsError("SVC_NAMESPACE: letters, digits, '-' and '_' only")
        try:
            split_urls(self.amqp_url)
        except ValueError as exc:
            raise SettingsError(f"SVC_AMQP_URL: {exc}") from None
        if self.queue_type not in ("classic", "quorum"):
            raise SettingsError("SVC_QUEUE_TYPE: classic or quorum")
        positive = (
            "dispatcher_concurrency",
            "endpoint_concurrency",
            "delivery_timeout",
            "database_pool_size",
            "publish_timeout",
            "batch_publish_timeout",
            "database_acquire_timeout",
            "endpoint_disable_after",
            "endpoint_failing_after",
            "retry_rescue_after",
            "dashboard_session_max_age",
            "failed_auth_window",
        )
        for name in positive:
            if getattr(self, name) <= 0:
                raise SettingsError(f"SVC_{name.upper()}: must be positive")
        for name in (
            "rate_limit_live",
            "rate_limit_test",
            "api_key_cache_ttl",
            "database_statement_timeout",
            "failed_auth_limit",
            "trusted_proxy_hops",
            "max_streams_per_key",
            "max_endpoints_per_scope",
        ):
            if getattr(self, name) < 0:
                raise SettingsError(f"SVC_{name.upper()}: must not be negative")
        if self.settlement_delay < 0:
            raise SettingsError("SVC_SETTLEMENT_DELAY: must not be negative")
        if self.request_timeout <= 0:
            raise SettingsError("SVC_REQUEST_TIMEOUT: must be positive")
        if self.ops_port == self.http_port:
            raise SettingsError("SVC_OPS_PORT: must differ from SVC_HTTP_PORT")
        self._validate_tracing()
        self._validate_egress()
        self._validate_limits()

    def _validate_limits(self) -> None:
        if not 1 <= self.max_recover_events <= MAX_RECOVER_EVENTS:
            raise SettingsError(f"SVC_MAX_RECOVER_EVENTS: from 1 to {MAX_RECOVER_EVENTS}")

    def _validate_egress(self) -> None:
        if not self.egress_proxy:
            return
        try:
            proxy = URL(self.egress_proxy)
            port = proxy.port
        except ValueError:
            proxy, port = URL(), None
        if proxy.scheme != "http" or not proxy.host or port is None or proxy.path not in ("", "/"):
            raise SettingsError(
                "SVC_EGRESS_PROXY: an http:// proxy URL with a host and an optional port, "
                "such as http://user:password@egress-proxy:3128"
            )

    def _validate_tracing(self) -> None:
        if self.otel_sampler not in OTEL_SAMPLERS:
            raise SettingsError(f"SVC_OTEL_SAMPLER: one of {', '.join(OTEL_SAMPLERS)}")
        if not 0 <= self.otel_sampler_arg <= 1:
            raise SettingsError("SVC_OTEL_SAMPLER_ARG: a ratio from 0 to 1")
        if self.otel_exporter not in OTEL_EXPORTERS:
            raise SettingsError(f"SVC_OTEL_EXPORTER: one of {', '.join(OTEL_EXPORTERS)}")

    @property
    def amqp_urls(self) -> tuple[str, ...]:
        """The broker URLs of ``amqp_url`` in the order they are tried."""
        return split_urls(self.amqp_url)

    def resolved(self) -> Settings:
        """These settings with the defaults that follow other settings filled in, once at
        start-up: an empty ``checkout_base_url`` (``dashboard_url``) is this API's own checkout
        (dashboard) path on 127.0.0.1 at ``http_port``. An explicit value is kept as it is."""
        if self.checkout_base_url and self.dashboard_url and not self.dashboard_url.endswith("/"):
            return self
        own = f"http://127.0.0.1:{self.http_port}"
        return replace(
            self,
            checkout_base_url=self.checkout_base_url or f"{own}/checkout",
            dashboard_url=(self.dashboard_url or f"{own}/dashboard").rstrip("/"),
        )


def _convert(name: str, type_name: str, raw: str) -> object:
    if name == "retry_ladder":
        return RetryLadder.parse(raw)
    if name in ("otel_sampler", "otel_exporter"):
        return raw.strip().lower()
    if name == "otel_sampler_arg":  # a ratio, not a duration
        return float(raw)
    if type_name == "bool":
        return _bool(raw)
    if type_name == "int":
        return int(raw)
    if type_name == "float":
        return _seconds(raw)
    return raw
