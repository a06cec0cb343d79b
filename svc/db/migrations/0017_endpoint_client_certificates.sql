-- Client certificates per endpoint (mTLS): the certificate chain the dispatcher presents, its
-- private key sealed like signing secrets (bound to the endpoint's id, never returned), and
-- the CA bundle trusted for the endpoint's server instead of the system's.
ALTER TABLE webhook_endpoints
    ADD COLUMN client_certificate text,
    ADD COLUMN client_key bytea,
    ADD COLUMN client_key_key_id text,
    ADD COLUMN server_ca text;
