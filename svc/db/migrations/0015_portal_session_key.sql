-- A portal session belongs to the API key that asked for its link: once that key is revoked or
-- has expired, the link no longer opens and the session it started ends at its next request.
-- Links and sessions made before this carry no key and keep their own expiry.
ALTER TABLE portal_sessions ADD COLUMN key_id text;
