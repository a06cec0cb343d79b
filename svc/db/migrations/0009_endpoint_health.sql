-- An endpoint's delivery health picture (successes and failures per hour) reads this small
-- aggregate instead of the delivery log. A statement trigger keeps it: every batch of
-- attempts (one COPY) adds its counts per endpoint and hour in the same transaction, so the
-- picture agrees with the log whoever writes it. Rows are striped by the writing backend
-- (shard), so dispatchers writing at once never wait on one hot row; a reader sums the
-- stripes of an endpoint's hours, one range of the primary key. Retention deletes old hours
-- with the log's partitions.
CREATE TABLE endpoint_hourly_outcomes (
    endpoint_id  text NOT NULL,
    hour         timestamptz NOT NULL,
    shard        smallint NOT NULL,
    succeeded    integer NOT NULL,
    failed       integer NOT NULL,
    PRIMARY KEY (endpoint_id, hour, shard)
);

CREATE FUNCTION count_endpoint_outcomes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Rows are taken in key order, so two batches never lock each other's rows crosswise.
    INSERT INTO endpoint_hourly_outcomes AS h (endpoint_id, hour, shard, succeeded, failed)
    SELECT endpoint_id, date_trunc('hour', attempted_at, 'UTC'), pg_backend_pid() % 16,
           count(*) FILTER (WHERE outcome = 'success'),
           count(*) FILTER (WHERE outcome <> 'success')
    FROM new_attempts
    GROUP BY 1, 2
    ORDER BY 1, 2
    ON CONFLICT (endpoint_id, hour, shard) DO UPDATE
        SET succeeded = h.succeeded + excluded.succeeded, failed = h.failed + excluded.failed;
    RETURN NULL;
END
$$;

CREATE TRIGGER delivery_attempts_hourly_outcomes
    AFTER INSERT ON delivery_attempts
    REFERENCING NEW TABLE AS new_attempts
    FOR EACH STATEMENT EXECUTE FUNCTION count_endpoint_outcomes();

-- The last two days of attempts already logged (the picture shows one), counted once; the
-- partitions' bounds keep this to those days.
INSERT INTO endpoint_hourly_outcomes (endpoint_id, hour, shard, succeeded, failed)
SELECT endpoint_id, date_trunc('hour', attempted_at, 'UTC'), 0,
       count(*) FILTER (WHERE outcome = 'success'),
       count(*) FILTER (WHERE outcome <> 'success')
FROM delivery_attempts
WHERE attempted_at >= now() - interval '2 days'
GROUP BY 1, 2;
