-- Ordered delivery: an endpoint with ordered = true gets its events one at a time, in
-- creation order. Each delivery waits in ordered_deliveries until its turn; one dispatcher at
-- a time runs an endpoint's lane, holding a renewable lease in ordered_lanes (a dispatcher
-- that dies lets its lease run out, and another takes the lane over where it stood: the
-- head's attempt count and schedule are kept on its row).
CREATE TABLE ordered_deliveries (
    endpoint_id        text NOT NULL,
    event_created_at   timestamptz NOT NULL,
    event_id           text NOT NULL,
    org_id             text NOT NULL,
    env                text NOT NULL,
    event_type         text NOT NULL,
    traceparent        text NOT NULL DEFAULT '',
    attempt            integer NOT NULL DEFAULT 1,
    step               integer NOT NULL DEFAULT 0,
    first_attempt_at   timestamptz,
    next_attempt_at    timestamptz,
    PRIMARY KEY (endpoint_id, event_created_at, event_id)
);

CREATE TABLE ordered_lanes (
    endpoint_id  text PRIMARY KEY,
    owner        text NOT NULL DEFAULT '',
    lease_until  timestamptz NOT NULL DEFAULT '-infinity'
);
CREATE INDEX ordered_lanes_lease ON ordered_lanes (lease_until);
