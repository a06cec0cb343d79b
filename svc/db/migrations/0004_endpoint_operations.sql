-- Endpoint operations: secret rotation, the signature scheme, rate limits, ordered delivery
-- and disabling (by the owner, or by the scheduler after SVC_ENDPOINT_DISABLE_AFTER of
-- failures).
--
-- The previous secret of a rotation is sealed like the current one (AES-GCM under the key
-- named by previous_secret_key_id, bound to the endpoint's id) and signs deliveries until
-- previous_secret_expires_at. enabled_at is when a disabled endpoint was turned on again:
-- failures are counted from then (NULL: from created_at).
ALTER TABLE webhook_endpoints
    ADD COLUMN previous_secret             bytea,
    ADD COLUMN previous_secret_key_id      text,
    ADD COLUMN previous_secret_expires_at  timestamptz,
    ADD COLUMN signature_scheme            text NOT NULL DEFAULT 'svc'
        CHECK (signature_scheme IN ('svc', 'standard-webhooks')),
    ADD COLUMN rate_limit                  integer CHECK (rate_limit > 0),
    ADD COLUMN ordered                     boolean NOT NULL DEFAULT false,
    ADD COLUMN disabled                    boolean NOT NULL DEFAULT false,
    ADD COLUMN disabled_reason             text,
    ADD COLUMN disabled_at                 timestamptz,
    ADD COLUMN enabled_at                  timestamptz,
    ADD CONSTRAINT webhook_endpoints_previous_secret_whole CHECK (
        (previous_secret IS NULL) = (previous_secret_key_id IS NULL)
        AND (previous_secret IS NULL) = (previous_secret_expires_at IS NULL)),
    ADD CONSTRAINT webhook_endpoints_disabled_reason CHECK (
        disabled = (disabled_reason IS NOT NULL));

-- The automatic disabling looks at enabled endpoints only; each one's attempts are then read
-- through delivery_attempts_endpoint (endpoint_id, attempted_at DESC, id DESC).
CREATE INDEX webhook_endpoints_enabled
    ON webhook_endpoints ((coalesce(enabled_at, created_at))) WHERE NOT disabled;

-- A bulk recover leaves out test sends (each is meant for its one endpoint); they are few,
-- so this index costs next to nothing on the delivery log's writes.
CREATE INDEX delivery_attempts_test ON delivery_attempts (event_id) WHERE trigger = 'test';
