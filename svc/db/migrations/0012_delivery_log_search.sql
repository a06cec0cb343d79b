-- The searchable delivery log: an endpoint's attempts filtered by outcome, response code (a
-- code or its class), or event type, newest first. Each filter reads one range of an index
-- ordered like the list (endpoint, filter value, attempted_at DESC, id DESC), so a page costs
-- the same however large the log; the scope-wide list reads one such range per endpoint of
-- the scope and merges the pages. A filter by event uses delivery_attempts_event.
CREATE INDEX delivery_attempts_endpoint_outcome
    ON delivery_attempts (endpoint_id, outcome, attempted_at DESC, id DESC);
CREATE INDEX delivery_attempts_endpoint_status_class
    ON delivery_attempts (endpoint_id, (status_code / 100), attempted_at DESC, id DESC);
CREATE INDEX delivery_attempts_endpoint_type
    ON delivery_attempts (endpoint_id, event_type, attempted_at DESC, id DESC);

-- An event skipped while its endpoint was disabled (outcome skipped_disabled) is logged but
-- was never sent: it counts as neither a success nor a failure in the health picture.
CREATE OR REPLACE FUNCTION count_endpoint_outcomes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Rows are taken in key order, so two batches never lock each other's rows crosswise.
    INSERT INTO endpoint_hourly_outcomes AS h (endpoint_id, hour, shard, succeeded, failed)
    SELECT endpoint_id, date_trunc('hour', attempted_at, 'UTC'), pg_backend_pid() % 16,
           count(*) FILTER (WHERE outcome = 'success'),
           count(*) FILTER (WHERE outcome <> 'success')
    FROM new_attempts
    WHERE outcome <> 'skipped_disabled'
    GROUP BY 1, 2
    ORDER BY 1, 2
    ON CONFLICT (endpoint_id, hour, shard) DO UPDATE
        SET succeeded = h.succeeded + excluded.succeeded, failed = h.failed + excluded.failed;
    RETURN NULL;
END
$$;
