-- The system of record: organisations, keys, endpoints, terminals, payments, events, the
-- outbox, every delivery attempt and idempotency records. Times are timestamptz (UTC).
-- Events and delivery attempts are range-partitioned by day (see svc/db/partitions.py);
-- retention drops whole partitions.

CREATE TABLE organisations (
    id          text PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- API keys are kept as SHA-256 digests; the readable prefix helps people tell keys apart.
CREATE TABLE api_keys (
    digest      bytea PRIMARY KEY,
    prefix      text NOT NULL,
    org_id      text NOT NULL REFERENCES organisations (id),
    env         text NOT NULL CHECK (env IN ('test', 'live')),
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX api_keys_scope ON api_keys (org_id, env);

-- Signing secrets are AES-GCM ciphertexts (nonce || ciphertext) under the key named by
-- secret_key_id, so a dump of the database holds no usable secret.
CREATE TABLE webhook_endpoints (
    id             text PRIMARY KEY,
    org_id         text NOT NULL REFERENCES organisations (id),
    env            text NOT NULL CHECK (env IN ('test', 'live')),
    url            text NOT NULL,
    events         text[] NOT NULL,
    description    text NOT NULL DEFAULT '',
    secret         bytea NOT NULL,
    secret_key_id  text NOT NULL,
    created_at     timestamptz NOT NULL
);
CREATE INDEX webhook_endpoints_scope ON webhook_endpoints (org_id, env, created_at DESC, id DESC);

CREATE TABLE terminals (
    id                 text PRIMARY KEY,
    org_id             text NOT NULL REFERENCES organisations (id),
    env                text NOT NULL CHECK (env IN ('test', 'live')),
    name               text NOT NULL,
    simulated          boolean NOT NULL DEFAULT false,
    status             text NOT NULL DEFAULT 'offline' CHECK (status IN ('online', 'offline')),
    conn               text NOT NULL DEFAULT '',
    current_payment_id text,
    secret_digest      bytea NOT NULL UNIQUE,
    created_at         timestamptz NOT NULL,
    status_changed_at  timestamptz NOT NULL
);
CREATE INDEX terminals_scope ON terminals (org_id, env, created_at, id);
CREATE UNIQUE INDEX terminals_one_simulator ON terminals (org_id) WHERE simulated;
CREATE INDEX terminals_online ON terminals (id) WHERE status = 'online';

CREATE TABLE payments (
    id              text PRIMARY KEY,
    org_id          text NOT NULL REFERENCES organisations (id),
    env             text NOT NULL CHECK (env IN ('test', 'live')),
    status          text NOT NULL
                    CHECK (status IN ('pending', 'authorized', 'succeeded', 'failed', 'canceled')),
    amount          bigint NOT NULL CHECK (amount > 0),
    currency        text NOT NULL,
    channel         text NOT NULL,
    tip             bigint NOT NULL DEFAULT 0 CHECK (tip >= 0),
    success_url     text,
    checkout_token  text,
    terminal_id     text REFERENCES terminals (id),
    tip_prompt      boolean NOT NULL DEFAULT false,
    failure_code    text,
    cancel_reason   text,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    expires_at      timestamptz
);
CREATE INDEX payments_scope ON payments (org_id, env, created_at DESC, id DESC);
CREATE INDEX payments_open_deadline ON payments (expires_at)
    WHERE status IN ('pending', 'authorized');

CREATE TABLE payment_steps (
    payment_id  text NOT NULL REFERENCES payments (id),
    seq         integer NOT NULL,
    step        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (payment_id, seq)
);

-- body holds the exact envelope bytes every delivery sends; never re-serialised.
CREATE TABLE events (
    id          text NOT NULL,
    org_id      text NOT NULL,
    env         text NOT NULL,
    type        text NOT NULL,
    created_at  timestamptz NOT NULL,
    body        bytea NOT NULL
) PARTITION BY RANGE (created_at);
CREATE INDEX events_id ON events (id);
CREATE INDEX events_scope ON events (org_id, env, created_at DESC, id DESC);

-- An outbox row lives from the commit of its event until the broker confirms the publish.
CREATE TABLE outbox (
    event_id    text PRIMARY KEY,
    created_at  timestamptz NOT NULL
);
CREATE INDEX outbox_age ON outbox (created_at);

-- One row per attempt. The delivery state of an event at an endpoint is its latest attempt:
-- succeeded, failed with a next attempt, or exhausted (failed, no next attempt).
CREATE TABLE delivery_attempts (
    id               text NOT NULL,
    event_id         text NOT NULL,
    event_type       text NOT NULL,
    endpoint_id      text NOT NULL,
    attempt          integer NOT NULL,
    trigger          text NOT NULL,
    outcome          text NOT NULL,
    status_code      integer,
    error            text,
    duration_ms      double precision NOT NULL,
    response_body    text NOT NULL,
    attempted_at     timestamptz NOT NULL,
    next_attempt_at  timestamptz
) PARTITION BY RANGE (attempted_at);
CREATE INDEX delivery_attempts_endpoint
    ON delivery_attempts (endpoint_id, attempted_at DESC, id DESC);
CREATE INDEX delivery_attempts_event ON delivery_attempts (event_id, attempted_at DESC, id DESC);

-- The first response to a request with an Idempotency-Key, written in the transaction of
-- the state change it answers for. The body is encrypted like signing secrets: a response
-- may carry one (endpoint creation).
CREATE TABLE idempotency_keys (
    org_id        text NOT NULL,
    env           text NOT NULL,
    key_digest    bytea NOT NULL,
    fingerprint   text NOT NULL,
    status        integer NOT NULL,
    content_type  text NOT NULL,
    body          bytea NOT NULL,
    body_key_id   text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    PRIMARY KEY (org_id, env, key_digest)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
