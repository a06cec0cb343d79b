-- Portal sessions: a platform's backend asks for a one-time link (POST /v1/portal_sessions) for
-- one organisation and environment; opening the link redeems it and starts a browser session
-- bound to the platform's frame origin and branding. Only digests of the link's token and of
-- the session's cookie are stored, so whoever reads the table can neither open a link nor
-- take over a session. A link is redeemed at most once: the redeeming UPDATE requires
-- redeemed_at to be empty.
CREATE TABLE portal_sessions (
    id text PRIMARY KEY,
    org_id text NOT NULL,
    env text NOT NULL,
    link_digest bytea NOT NULL UNIQUE,
    frame_origin text,
    name text,
    accent_color text,
    csrf text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    link_expires_at timestamptz NOT NULL,
    redeemed_at timestamptz,
    cookie_digest bytea UNIQUE,
    expires_at timestamptz
);
CREATE INDEX portal_sessions_expiry ON portal_sessions (link_expires_at);
