-- RabbitMQ destinations: the password of an amqp[s]:// endpoint URL is kept out of the url
-- column and sealed here like signing secrets (bound to the endpoint's id, never returned).
ALTER TABLE webhook_endpoints
    ADD COLUMN url_password bytea,
    ADD COLUMN url_password_key_id text;
