-- API keys become a resource of their own: an id, a name, permissions (NULL: full access), an
-- expiry, a revocation, the last use (to the minute), and the previous secret of a rolled key
-- with the time it stops working. Secrets stay digests only; a key row keeps its current
-- digest as before, so a process that only resolves keys reads what it always read.
ALTER TABLE api_keys
    ADD COLUMN id                   text,
    ADD COLUMN name                 text NOT NULL DEFAULT '',
    ADD COLUMN permissions          text[],
    ADD COLUMN expires_at           timestamptz,
    ADD COLUMN revoked_at           timestamptz,
    ADD COLUMN last_used_at         timestamptz,
    ADD COLUMN previous_digest      bytea UNIQUE,
    ADD COLUMN previous_expires_at  timestamptz;

-- Keys made before this keep working, each with an id of the usual form (key_ and 26
-- base32hex characters). Theirs are random rather than time-ordered: lists order by creation
-- time first. The subquery names the row so that it runs once per key.
UPDATE api_keys SET id = 'key_' || (
    SELECT string_agg(substr('0123456789abcdefghijklmnopqrstuv', 1 + floor(random() * 32)::int, 1), '')
    FROM generate_series(1, 26) WHERE api_keys.digest IS NOT NULL);

-- Lists page by (created_at, id) with cursors that hold milliseconds.
UPDATE api_keys SET created_at = date_trunc('milliseconds', created_at);

ALTER TABLE api_keys ALTER COLUMN id SET NOT NULL;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_id UNIQUE (id);
DROP INDEX api_keys_scope;
CREATE INDEX api_keys_listing ON api_keys (org_id, env, created_at DESC, id DESC);
