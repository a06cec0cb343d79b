-- An event is identified within its scope: (organisation, environment, id). Foreign producers
-- choose their own ids (order numbers), so two scopes' events may share one; each is stored,
-- read and resent as its own event. A unique index on the partitioned table would have to
-- include the partition key (the day), so it could not say "one per scope"; storing a foreign
-- event stays one statement that inserts unless its scope already holds the id, and this
-- index answers that (and every lookup of an event in its scope) with one probe per partition.
-- It is built on the existing partitions too; rows stored before keep their scope columns and
-- stay readable as they are.
CREATE INDEX events_id_scope ON events (id, org_id, env);
DROP INDEX events_id;

-- The outbox row names its event's scope, so the sweep publishes that event and no other
-- scope's with the same id. Rows staged before this migration have no scope: the sweep reads
-- them by id and time, as it did.
ALTER TABLE outbox ADD COLUMN org_id text, ADD COLUMN env text;

-- Delivery attempts belong to an endpoint, and an endpoint to one scope: an event's attempts
-- are read through its scope's endpoints (webhook_endpoints_scope), so no column is added to
-- the delivery log's hot writes.
