-- An endpoint's custom headers (added to every delivery) and payload filter (a condition on
-- the envelope; events it leaves out are not sent). The headers may carry the receiver's
-- credentials, so they are sealed like signing secrets, bound to the endpoint's id; the
-- filter is plain JSON.
ALTER TABLE webhook_endpoints
    ADD COLUMN headers bytea,
    ADD COLUMN headers_key_id text,
    ADD COLUMN filter jsonb;
