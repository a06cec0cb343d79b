-- Telling an organisation about its endpoints: operational events and email notices.
--
-- An endpoint's failure episode starts when it is found failing (or an event is exhausted at
-- it) and ends at its next success, or when it is turned off or on. The two marks say which
-- notices this episode has had already, so each kind goes out at most once per episode; the
-- scheduler clears them when it sees a success after them, so the dispatcher's successes add
-- no write of their own.
ALTER TABLE webhook_endpoints
    ADD COLUMN failing_noticed_at timestamptz,
    ADD COLUMN exhausted_noticed_at timestamptz;

-- The few endpoints in an episode, read by the scheduler's check for its end.
CREATE INDEX webhook_endpoints_noticed ON webhook_endpoints (id)
    WHERE failing_noticed_at IS NOT NULL OR exhausted_noticed_at IS NOT NULL;

-- Where an organisation's notices go, per environment.
CREATE TABLE notification_settings (
    org_id      text NOT NULL,
    env         text NOT NULL,
    emails      text[] NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (org_id, env)
);

-- Notices to mail, staged in the transaction of the change they tell of and drained by the
-- scheduler (an outbox): a row stays until its mail is sent, retried with back-off.
CREATE TABLE notices (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id       text NOT NULL,
    env          text NOT NULL,
    kind         text NOT NULL,
    endpoint_id  text NOT NULL,
    url          text NOT NULL,
    detail       text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL,
    tries        integer NOT NULL DEFAULT 0,
    due_at       timestamptz NOT NULL,
    last_error   text
);
CREATE INDEX notices_due ON notices (due_at);
