"""Redis stores: API keys, webhook endpoints, events with their outbox, the delivery log."""
