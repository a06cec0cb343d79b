-- Resend and test-send requests, kept until the broker confirmed them on <ns>.commands:
-- committed with the request (and its idempotency record), published after the commit,
-- re-published by the scheduler's sweep when that publish was lost.
CREATE TABLE command_outbox (
    id          bigserial PRIMARY KEY,
    created_at  timestamptz NOT NULL DEFAULT now(),
    body        bytea NOT NULL
);
CREATE INDEX command_outbox_age ON command_outbox (created_at);
